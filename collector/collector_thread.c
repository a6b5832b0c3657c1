/* collector_thread.c — the collector's own thread: everything that is not a mere copy.
 *
 * Order is what makes the model right. Allocation ids are taken from one counter, and a GC can
 * only start while no thread is inside ObjectAllocated, so GC n splits the ids: every id below
 * its first_id_after was allocated before it (at a pre-GC address), every other id after it (at
 * a post-GC address). The loop therefore drains the thread chunks only up to the boundary of the
 * oldest GC not yet applied, applies that GC once it has finished, and moves on. The same order
 * holds on the wire (see wire/hl_wire.h).
 *
 * Per allocation the loop only appends to the model and to the young arrays (young.h); at each
 * GC, once the model has applied it, one pass over those arrays gives the interval's counts and
 * its survivor rows. Sending may wait for the writer (outbox.h); meanwhile wait_drain keeps the
 * thread chunks draining as far as the GC boundary allows, so allocating threads keep finding
 * room in the pool.
 */
#define _GNU_SOURCE
#include "collector/mem.h"
#include "collector/collector_internal.h"
#include "collector/rejit.h"
#include "collector/resident.h"
#include "collector/eventpipe.h"
#include "collector/discovery.h"
#include "collector/forcers.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define RESUME_GRACE_NS 50000000 /* wait this long after a GC for the end of its pause */

/* The collector thread's own CPU time: the stats measure its work, not the time the scheduler
 * gives the program's threads (they share the cores). */
static uint64_t cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The collector thread's minor page faults and system time so far (HEAPLENS_STATS' minflt and
 * sys_ms, part of cpu_ms): the kernel's share of its CPU, first touches of fresh pages among it
 * (bench/README.md, "Page faults and huge pages per survivor"). */
static struct rusage thread_rusage(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0)
        memset(&ru, 0, sizeof ru);
    return ru;
}

/* cpu_ns() when the stats are asked for (HEAPLENS_STATS=1), else 0: their timings only. */
static uint64_t stat_ns(const collector *c) {
    return c->stats ? cpu_ns() : 0;
}

/* ---- records lost ----------------------------------------------------------------------- */

/* Reads `n` bytes at `off` of a payload given as two pieces (see hl_outbox_lost_fn). */
static bool piece_read(const void *a, size_t na, const void *b, size_t nb, size_t off, void *out,
                       size_t n) {
    if (off + n > na + nb)
        return false;
    for (size_t i = 0; i < n; i++, off++)
        ((uint8_t *)out)[i] = off < na ? ((const uint8_t *)a)[off] : ((const uint8_t *)b)[off - na];
    return true;
}

/* The outbox gives a record up (writer lost): count what it carried in the user's units. GC
 * and snapshot records of one GC or snapshot come together, so "a different number than the
 * last one dropped" counts each GC or snapshot once. */
static void on_record_lost(void *ctx, uint16_t type, const void *a, size_t na, const void *b,
                           size_t nb) {
    collector *c = ctx;
    uint32_t head[2] = {0, 0};
    if (!piece_read(a, na, b, nb, 0, head, sizeof head))
        return;
    switch (type) {
    case HL_REC_ALLOC_COUNTS:
        for (uint32_t k = 0; k < head[1]; k++) {
            uint64_t count;
            uint32_t flags = 0;
            size_t at = sizeof(hl_alloc_counts) + k * sizeof(hl_alloc_count);
            /* Unreported allocations are not in allocs_seen: not counted as dropped either. */
            if (piece_read(a, na, b, nb, at + offsetof(hl_alloc_count, flags), &flags,
                           sizeof flags) &&
                !(flags & (HL_ALLOC_FLAG_UNREPORTED | HL_ALLOC_FLAG_CENSUS)) &&
                piece_read(a, na, b, nb, at + offsetof(hl_alloc_count, count), &count,
                           sizeof count))
                c->allocs_dropped_writer += count;
        }
        break;
    case HL_REC_ALLOC_SAMPLES:
        c->samples_dropped_writer += head[1];
        break;
    case HL_REC_GC_START:
    case HL_REC_GC_END:
        if (head[0] != c->last_gc_dropped) {
            c->last_gc_dropped = head[0];
            c->gcs_dropped++;
        }
        break;
    case HL_REC_SNAPSHOT_START:
    case HL_REC_SNAPSHOT_OBJECTS:
    case HL_REC_SNAPSHOT_REFS:
    case HL_REC_SNAPSHOT_ROOTS:
    case HL_REC_SNAPSHOT_END:
        if (head[0] != c->last_snapshot_dropped) {
            c->last_snapshot_dropped = head[0];
            c->snapshots_dropped++;
        }
        break;
    default:
        break;
    }
}

static void counters_fill(collector *c, hl_counters *k) {
    hl_profiler *p = c->p;
    memset(k, 0, sizeof *k);
    k->allocs_seen = hl_tbufs_allocations(&p->rings);
    k->allocs_dropped_buffer = hl_tbufs_dropped(&p->rings);
    k->allocs_dropped_writer = c->allocs_dropped_writer;
    k->allocs_dropped = k->allocs_dropped_buffer + k->allocs_dropped_writer;
    k->gc_events_dropped = atomic_load(&p->gcs.lost) + c->model_failures + c->young.failures +
                           hl_tbufs_handles_dropped(&p->rings);
    k->records_dropped = c->out.records_dropped;
    k->bytes_dropped = c->out.bytes_dropped;
    k->model_anomalies = c->anomalies;
    k->threads_overflowed = atomic_load(&p->rings.overflowed) + atomic_load(&p->names_dropped);
    k->gcs_dropped = c->gcs_dropped;
    k->snapshots_dropped = c->snapshots_dropped;
    k->writer_lost = c->out.lost;
    k->thread_waits = hl_tbufs_waits(&p->rings);
    k->thread_wait_ns = hl_tbufs_wait_ns(&p->rings);
    k->census_allocs = c->census_allocs;
    k->census_bytes = c->census_bytes;
}

/* The program's peak resident memory so far: VmHWM of /proc/self/status (kB), in bytes; 0 when
 * it cannot be read. Read at Shutdown, so it covers the whole run (heaplens included). */
static uint64_t program_peak_rss_bytes(void) {
    FILE *f = fopen("/proc/self/status", "re");
    if (!f)
        return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %llu kB", &kb) == 1)
            break;
    fclose(f);
    return (uint64_t)kb * 1024u;
}

/* /proc/self/cmdline with the NULs between arguments made spaces. */
static void read_command_line(char *out, size_t size) {
    out[0] = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, out, size - 1);
    close(fd);
    if (n <= 0)
        return;
    for (ssize_t i = 0; i < n; i++)
        if (out[i] == 0)
            out[i] = ' ';
    out[n - 1] = 0;
}

static void send_run_start(collector *c) {
    hl_profiler *p = c->p;
    hl_stream_header h = {.version = HL_STREAM_VERSION};
    memcpy(h.magic, HL_STREAM_MAGIC, 8);
    hl_outbox_put_raw(&c->out, &h, sizeof h);

    char cmdline[2048];
    read_command_line(cmdline, sizeof cmdline);
    const char *strings[3] = {cmdline, p->runtime_version, "heaplens " HEAPLENS_VERSION};
    hl_run_start rs = {.pid = (uint32_t)getpid(), .mode = p->mode,
                       .start_unix_ns = p->start_unix_ns, .start_mono_ns = p->start_mono_ns,
                       .flags = (p->empty ? HL_RUN_FLAG_EMPTY_PROFILER : 0) |
                                (p->follow ? HL_RUN_FLAG_SAMPLES_FOLLOWED : 0) |
                                (p->handles ? HL_RUN_FLAG_HANDLES : 0) |
                                (p->census_off ? HL_RUN_FLAG_CENSUS_OFF : 0),
                       .pointer_size = 8};
    char payload[sizeof rs + 3 * 4 + sizeof cmdline + 64];
    size_t n = 0;
    memcpy(payload, &rs, sizeof rs);
    n += sizeof rs;
    for (int i = 0; i < 3; i++) {
        uint32_t len = (uint32_t)strnlen(strings[i], sizeof cmdline - 1);
        if (n + 4 + len > sizeof payload)
            len = 0;
        memcpy(payload + n, &len, 4);
        memcpy(payload + n + 4, strings[i], len);
        n += 4 + len;
    }
    hl_outbox_put(&c->out, HL_REC_RUN_START, payload, n, NULL, 0, NULL, 0);
}

/* ---- types and threads -------------------------------------------------------------------- */

/* A type's traits, once per type, when it is first seen: from its name and its parents' names
 * (GetClassIDInfo2). */
static uint8_t type_traits_resolve(collector *c, ClassID cls) {
    uint8_t traits = 0;
    /* Its own buffer: this runs inside drains, which may run while a TYPE record's name in
     * c->name waits in hl_outbox_put. As long as c->name: a collection's name is whole, or cut
     * as the TYPE record's (a generic one with long type arguments was cut at 256 bytes, inside
     * its type arguments, and went unrecognised: collections.h). */
    char *name = c->traits_name;
    hl_type_name(&c->names, cls, name, sizeof c->traits_name);
    hl_fields_note_collection(c, cls, name);
    if (strcmp(name, "System.WeakReference") == 0 ||
        strncmp(name, "System.WeakReference<", 21) == 0)
        traits |= TYPE_TRAIT_WEAK_REFERENCE;
    ClassID at = cls;
    for (int depth = 0; depth < 32; depth++) {
        ModuleID module = 0;
        mdTypeDef token = 0;
        ClassID parent = 0;
        uint32_t n_args = 0;
        if (HR_FAILED(info_get_class_id_info2(c->p->info, at, &module, &token, &parent, 0, &n_args,
                                              NULL)) || !parent)
            break;
        hl_type_name(&c->names, parent, name, sizeof c->traits_name);
        if (strcmp(name, "System.MulticastDelegate") == 0)
            traits |= TYPE_TRAIT_DELEGATE;
        else if (strcmp(name, "System.ValueType") == 0)
            traits |= TYPE_TRAIT_VALUE_TYPE;
        at = parent;
    }
    return traits;
}

static void type_traits_set(collector *c, uint32_t id, uint8_t traits) {
    if (id >= c->cap_traits) {
        size_t cap = c->cap_traits ? c->cap_traits * 2 : 1024;
        while (cap <= id)
            cap *= 2;
        uint8_t *grown = hl_mem_realloc(c->type_traits, cap);
        if (grown)
            c->type_traits = grown;
        uint32_t *sizes = grown ? hl_mem_realloc(c->type_sizes, cap * sizeof *sizes) : NULL;
        if (sizes)
            c->type_sizes = sizes;
        if (!grown || !sizes) {
            c->model_failures++;
            return;
        }
        memset(grown + c->cap_traits, 0, cap - c->cap_traits);
        memset(sizes + c->cap_traits, 0, (cap - c->cap_traits) * sizeof *sizes);
        c->cap_traits = cap;
    }
    c->type_traits[id] = traits;
}

uint32_t hl_collector_type_id_resolve(collector *c, ClassID cls) {
    size_t slot = (size_t)(cls >> 3) & 255; /* the cache's slot (hl_collector_type_id) */
    uint64_t *known = hl_u64map_get(&c->types, cls);
    uint32_t id;
    if (known) {
        id = (uint32_t)*known;
    } else {
        id = ++c->n_types;
        if (!hl_u64map_put(&c->types, cls, id))
            c->model_failures++; /* resolved again next time: a duplicate TYPE record, harmless */
        hl_type t = {.type_id = id, .class_id = cls};
        if (!hl_vec_push(&c->pending_types, &t))
            c->model_failures++;
        type_traits_set(c, id, type_traits_resolve(c, cls));
    }
    c->type_cache[slot].cls = cls;
    c->type_cache[slot].id = id;
    return id;
}

/* Whether instances of `cls` need finalization: the runtime's MethodTable::HasFinalizer, bit
 * 0x00100000 of the method table's first 32-bit word (methodtable.h enum_flag_HasFinalizer, the
 * same on .NET 8, 9 and 10, mirrored in CoreLib's MethodTable.cs), which the runtime sets when a
 * class or a parent overrides Object.Finalize and by which the GC registers each new instance for
 * finalization. No profiling call says it; the word is census.c's, read the same way. A ClassID
 * is a TypeHandle: one with bit 1 set is a TypeDesc (no method table), and arrays have none. */
static bool class_has_finalizer(ClassID cls) {
    if (!cls || (cls & 7))
        return false;
    uint32_t flags;
    memcpy(&flags, (const void *)(uintptr_t)cls, sizeof flags);
    return (flags & 0x00100000u) != 0;
}

void hl_collector_flush_types(collector *c) {
    /* Sending may wait, and the drain that runs meanwhile may queue more: index, not pointer. */
    for (size_t i = 0; i < c->pending_types.n; i++) {
        hl_type t = ((const hl_type *)c->pending_types.p)[i];
        t.flags = hl_type_name(&c->names, t.class_id, c->name, sizeof c->name);
        if (!(t.flags & (HL_TYPE_FLAG_ARRAY | HL_TYPE_FLAG_UNRESOLVED)) &&
            class_has_finalizer(t.class_id))
            t.flags |= HL_TYPE_FLAG_FINALIZER;
        hl_collector_put_str(c, HL_REC_TYPE, &t, sizeof t, c->name);
    }
    c->pending_types.n = 0;
}

/* ---- events from the thread buffers ------------------------------------------------------- */

#define WEAK_PENDING_KEY(os_tid) ((uint64_t)(os_tid) | 1ull << 32) /* never 0 */

/* A handle event as the drain keeps it until the drain's end (thread_buffers.h HL_EV_HANDLE_*). */
typedef struct handle_event {
    uint64_t seq, handle, target;
    unsigned kind;
} handle_event;

/* Per allocation: the model's append, and the young arrays' entry. Nothing here sends a record:
 * this also runs while the outbox waits for the writer (wait_drain). */
static inline __attribute__((always_inline)) void on_alloc(collector *c, uint64_t id,
                                                           const hl_ev_alloc *a, uint32_t os_tid) {
    hl_samples_on_alloc(c, id, a->addr, os_tid);
    if (hl_collector_follows_new(c) && hm_model_add(c->model, a->addr, id) != HM_OK)
        c->model_failures++;
    uint32_t type_id = hl_collector_type_id(c, a->class_id);
    hl_young_add(&c->young, id, type_id, os_tid, a->size);
    /* Events of one thread arrive in its order: remember its last WeakReference until its
     * next event (the HandleCreated of that WeakReference's constructor). */
    uint8_t traits = hl_collector_type_traits(c, type_id);
    if (traits & TYPE_TRAIT_WEAK_REFERENCE) {
        if (!hl_u64map_put(&c->weak_pending, WEAK_PENDING_KEY(os_tid), id))
            c->model_failures++;
    } else if (c->weak_pending.count) {
        hl_u64map_remove(&c->weak_pending, WEAK_PENDING_KEY(os_tid));
    }
    if (traits & (TYPE_TRAIT_DELEGATE | TYPE_TRAIT_VALUE_TYPE))
        hl_collector_type_size(c, type_id, a->size);
}

static void on_handle(collector *c, const hl_alloc_event *ev, uint32_t os_tid) {
    handle_event h = {.seq = ev[0].a, .handle = ev[0].b & HL_EV_LOW60, .target = ev[1].a,
                      .kind = HL_EV_KIND(ev)};
    if (h.kind == HL_EV_HANDLE_CREATED && c->weak_pending.count) {
        uint64_t *owner = hl_u64map_get(&c->weak_pending, WEAK_PENDING_KEY(os_tid));
        if (owner) {
            if (!hl_u64map_put(&c->weak_owned, *owner, h.handle))
                c->model_failures++;
            hl_u64map_remove(&c->weak_pending, WEAK_PENDING_KEY(os_tid));
        }
    }
    if (!hl_vec_push(&c->handle_events, &h))
        c->model_failures++;
}

/* A run of one thread's events (hl_tbufs_drain, hl_ev_next): one pass, on_alloc inlined. */
static size_t on_events(void *ctx, const hl_alloc_event *ev, size_t n, uint64_t limit,
                        uint64_t *id, uint32_t os_tid) {
    collector *c = ctx;
    hl_ev_iter it = {.ev = ev, .n = n, .limit = limit, .id = *id};
    for (const hl_alloc_event *e; (e = hl_ev_next(&it));) {
        switch (HL_EV_KIND(e)) {
        case HL_EV_ALLOC:
        case HL_EV_ALLOC_WIDE: {
            hl_ev_alloc a = hl_ev_alloc_decode(e);
            on_alloc(c, it.id - 1, &a, os_tid);
            break;
        }
        case HL_EV_HANDLE_CREATED:
        case HL_EV_HANDLE_DESTROYED:
            on_handle(c, e, os_tid);
            break;
        case HL_EV_SAMPLE:
            hl_samples_on_event(c, e, os_tid);
            break;
        }
    }
    *id = it.id;
    return it.at;
}

static int by_sequence(const void *a, const void *b) {
    uint64_t x = ((const handle_event *)a)->seq, y = ((const handle_event *)b)->seq;
    return (x > y) - (x < y);
}

/* Drains the thread buffers up to `limit`. Slots are read one after another, so events of
 * different threads arrive out of order. That is harmless for allocations (distinct addresses)
 * but not for handles: a handle destroyed on one thread and its address reused by another
 * thread's HandleCreated must be applied in that order. So handle events wait until the whole
 * drain is in and are applied sorted by their sequence number (also after every allocation they
 * may target). */
static uint64_t drain(collector *c, uint64_t limit) {
    uint64_t t0 = stat_ns(c);
    uint64_t n = hl_tbufs_drain(&c->p->rings, limit, on_events, c);
    c->drain_ns += stat_ns(c) - t0;
    c->drained += n;
    if (!c->handle_events.n)
        return n;
    /* Applying sends records, which may wait and drain more: those events go to a fresh vector
     * and are applied by the next drain. */
    id_vec events = c->handle_events;
    c->handle_events = (id_vec){.elem = sizeof(handle_event)};
    handle_event *ev = events.p;
    qsort(ev, events.n, sizeof *ev, by_sequence);
    for (size_t i = 0; i < events.n; i++) {
        if (ev[i].kind == HL_EV_HANDLE_CREATED)
            hl_handles_created(c, ev[i].handle, ev[i].target);
        else
            hl_handles_destroyed(c, ev[i].handle);
    }
    if (!c->handle_events.n) {
        hl_vec_release(&c->handle_events);
        events.n = 0;
        c->handle_events = events; /* keep the buffer */
    } else {
        hl_vec_release(&events);
    }
    return n;
}

/* How far a drain may go now: to the boundary of the oldest GC whose interval is still open, or
 * to the id counter. Read the counter before the GC queue: a GC that starts after this read has
 * a boundary >= the value read. */
static uint64_t drain_limit(collector *c) {
    hl_profiler *p = c->p;
    uint64_t limit = atomic_load_explicit(&p->next_id, memory_order_acquire);
    for (size_t k = 0;; k++) {
        hl_gc_capture *g = hl_gc_peek_at(&p->gcs, k);
        if (!g)
            break;
        if (g->gc > c->interval_gc) {
            if (g->first_id_after < limit)
                limit = g->first_id_after;
            break;
        }
    }
    return limit;
}

/* Threads wait for a free chunk: free the chunks whose events this thread cannot take yet (past
 * a GC boundary, or while a GC is half applied) by moving those events into its own memory. */
static void spill_for_waiters(collector *c) {
    if (hl_tbufs_waiters(&c->p->rings))
        c->spilled += hl_tbufs_spill(&c->p->rings);
}

/* The outbox's on_wait: while it waits for the writer, keep the pool from filling, as far as the
 * GC boundary allows (and not while a GC is half applied: drain_while_waiting). */
static void wait_drain(void *ctx) {
    collector *c = ctx;
    if (c->drain_while_waiting) {
        uint64_t t0 = stat_ns(c);
        uint64_t n = hl_tbufs_drain(&c->p->rings, drain_limit(c), on_events, c);
        c->drain_ns += stat_ns(c) - t0;
        c->drained += n;
        c->drained_waiting += n;
    }
    spill_for_waiters(c);
}

/* A thread's name and its OS thread come in separate callbacks, in either order (a Thread is
 * usually named before it starts). Merge them and send a THREAD record once both are known. */
static known_thread *thread_entry(collector *c, ThreadID id) {
    for (size_t i = 0; i < c->n_threads; i++)
        if (c->threads[i].thread == id)
            return &c->threads[i];
    if (!hl_mem_reserve((void **)&c->threads, &c->cap_threads, c->n_threads + 1,
                        sizeof *c->threads, 64))
        return NULL;
    known_thread *t = &c->threads[c->n_threads++];
    memset(t, 0, sizeof *t);
    t->thread = id;
    return t;
}

static void drain_names(collector *c) {
    hl_profiler *p = c->p;
    uint64_t r = atomic_load_explicit(&p->names_read, memory_order_relaxed);
    uint64_t w = atomic_load_explicit(&p->names_written, memory_order_acquire);
    for (; r < w; r++) {
        const hl_name_event *e = &p->names[r % HL_NAME_EVENTS];
        known_thread *t = thread_entry(c, e->thread);
        if (!t)
            continue;
        if (e->os_tid)
            t->os_tid = e->os_tid;
        if (e->has_name)
            memcpy(t->name, e->name, sizeof t->name);
        if (t->os_tid && t->name[0]) {
            hl_thread rec = {.os_tid = t->os_tid, .thread_id = t->thread};
            hl_collector_put_str(c, HL_REC_THREAD, &rec, sizeof rec, t->name);
        }
    }
    atomic_store_explicit(&p->names_read, r, memory_order_release);
}

/* The program's checkpoints (eventpipe.c), in the order they were written. */
static void drain_checkpoints(collector *c) {
    hl_profiler *p = c->p;
    uint64_t r = atomic_load_explicit(&p->checkpoints_read, memory_order_relaxed);
    uint64_t w = atomic_load_explicit(&p->checkpoints_written, memory_order_acquire);
    for (; r < w; r++) {
        const hl_checkpoint_event *e = &p->checkpoints[r % HL_CHECKPOINT_EVENTS];
        hl_collector_put_str(c, HL_REC_CHECKPOINT, &e->rec, sizeof e->rec, e->name);
    }
    atomic_store_explicit(&p->checkpoints_read, r, memory_order_release);
}

/* ---- GCs -------------------------------------------------------------------------------- */

typedef struct gc_apply {
    collector *c;
} gc_apply;

static void sink_classified(void *ctx, uint64_t id, uint32_t heap) {
    gc_apply *a = ctx;
    hl_young_set_heap(&a->c->young, id, heap);
}

/* A WeakReference died in this GC: the runtime freed its handle during the GC. */
static void weak_reference_died(collector *c, uint64_t id) {
    uint64_t *handle = hl_u64map_get(&c->weak_owned, id);
    if (!handle)
        return;
    uint64_t h = *handle;
    hl_u64map_remove(&c->weak_owned, id);
    if (!hl_u64map_get(&c->handles, h))
        return; /* destroyed already (HandleDestroyed) */
    hl_u64map_remove(&c->handles, h);
    if (!hl_vec_push(&c->handles_freed, &h))
        c->model_failures++;
}

static void sink_died(void *ctx, uint64_t id, uint32_t gen_before) {
    gc_apply *a = ctx;
    collector *c = a->c;
    (void)gen_before;
    if (hl_young_has(&c->young, id)) {
        hl_young_set_gen(&c->young, id, HL_GEN_NONE);
        /* Young deaths are most deaths: look the type up before any map. */
        if (c->weak_owned.count &&
            (hl_collector_type_traits(c, hl_young_type(&c->young, id)) &
             TYPE_TRAIT_WEAK_REFERENCE))
            weak_reference_died(c, id);
    } else {
        uint64_t *death = hl_vec_append(&c->deaths);
        if (death)
            *death = id;
        else
            c->model_failures++;
        if (c->weak_owned.count)
            weak_reference_died(c, id);
        if (id >= HL_DISCOVERED_ID_BASE)
            hl_follow_named_add(&c->p->followed, gen_before, -1);
    }
}

/* Most young objects are reported in batches (one call per GC instead of one per object). With
 * young deaths in the classified words (apply_gc), a condemned one is dead until `survived`
 * says otherwise. */
static void sink_classified_young(void *ctx, const uint64_t *reports, size_t n) {
    gc_apply *a = ctx;
    hl_young *y = &a->c->young;
    for (size_t i = 0; i < n; i++) {
        uint32_t v = HM_REPORT_VALUE(reports[i]), heap = v & ~HM_REPORT_CONDEMNED;
        uint64_t id = HM_REPORT_ID(reports[i]);
        if (hl_young_has(y, id))
            y->fate[id - y->first] =
                HL_YOUNG_FATE(heap, v & HM_REPORT_CONDEMNED ? HL_GEN_NONE : heap);
    }
}

static void sink_died_young(void *ctx, const uint64_t *reports, size_t n) {
    gc_apply *a = ctx;
    collector *c = a->c;
    hl_young *y = &c->young;
    if (c->weak_owned.count) { /* a WeakReference among them may own a handle: the full path */
        for (size_t i = 0; i < n; i++)
            sink_died(ctx, HM_REPORT_ID(reports[i]), HM_REPORT_VALUE(reports[i]));
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t id = HM_REPORT_ID(reports[i]);
        if (hl_young_has(y, id))
            hl_young_set_gen(y, id, HL_GEN_NONE);
        else
            sink_died(ctx, id, HM_REPORT_VALUE(reports[i])); /* one the young arrays lost */
    }
}

static void sink_survived(void *ctx, uint64_t id, uint32_t gen_before, uint32_t gen_after) {
    gc_apply *a = ctx;
    if (hl_young_has(&a->c->young, id)) {
        hl_young_set_gen(&a->c->young, id, gen_after);
    } else if (gen_after != gen_before) {
        hl_promotion *pr = hl_vec_append(&a->c->promotions);
        if (pr)
            *pr = (hl_promotion){.id = id, .generation = gen_after};
        else
            a->c->model_failures++;
        if (id >= HL_DISCOVERED_ID_BASE) {
            hl_follow_named_add(&a->c->p->followed, gen_before, -1);
            hl_follow_named_add(&a->c->p->followed, gen_after, 1);
        }
    }
}

static void sizes_by_generation(const hm_gen_range *r, size_t n, uint64_t out[HL_GEN_COUNT_GC]) {
    memset(out, 0, sizeof(uint64_t) * HL_GEN_COUNT_GC);
    for (size_t i = 0; i < n; i++)
        if (r[i].generation < HL_GEN_COUNT_GC)
            out[r[i].generation] += r[i].length;
}

static void send_counts(collector *c, uint32_t gc, id_vec *counts) {
    for (size_t i = 0; i < counts->n; i++)
        if (!(((const hl_alloc_count *)counts->p)[i].flags &
              (HL_ALLOC_FLAG_UNREPORTED | HL_ALLOC_FLAG_CENSUS)))
            c->counted += ((const hl_alloc_count *)counts->p)[i].count;
    hl_alloc_counts head = {.gc = gc};
    hl_collector_put_chunked(c, HL_REC_ALLOC_COUNTS, &head, sizeof head, &head.count, counts->p,
                             counts->n, sizeof(hl_alloc_count));
    hl_vec_release(counts);
}

/* Allocations the runtime made without ObjectAllocated (hl_wire.h, HL_ALLOC_FLAG_UNREPORTED):
 * per delegate or value-type class, gen0 objects at this GC's start (ObjectsAllocatedByClass)
 * minus the interval's reported small-object-heap allocations, appended to `counts` as one
 * flagged entry per class. Other classes are not estimated: their differences are demoted
 * survivors and noise, not known unreported paths. */
static void unreported_counts(collector *c, const hl_gc_capture *g, id_vec *counts) {
    /* Allocations dropped for want of buffer room are in the runtime's gen0 but not among the
     * reported ones: in an interval with such drops the difference would count them a second
     * time, as unreported. No estimate then. */
    bool drops = g->drops_at_start != c->unreported_drops;
    c->unreported_drops = g->drops_at_start;
    if (!g->n_by_class || drops)
        return;
    hl_u64map walked; /* type id -> gen0 objects */
    hl_u64map_init(&walked);
    for (size_t i = 0; i < g->n_by_class; i++) {
        uint32_t type_id = hl_collector_type_id(c, g->by_class[i].class_id);
        if (!(hl_collector_type_traits(c, type_id) & (TYPE_TRAIT_DELEGATE | TYPE_TRAIT_VALUE_TYPE)))
            continue;
        uint64_t *n = hl_u64map_get(&walked, type_id);
        if (!hl_u64map_put(&walked, type_id, (n ? *n : 0) + g->by_class[i].objects))
            c->model_failures++;
    }
    if (!walked.count) {
        hl_u64map_release(&walked);
        return;
    }
    size_t reported_n = counts->n;
    for (size_t i = 0; i < reported_n; i++) {
        const hl_alloc_count *a = (const hl_alloc_count *)counts->p + i;
        uint64_t *n = hl_u64map_get(&walked, a->type_id);
        if (!n || (a->heap != HL_GEN_0 && a->heap != HL_GEN_NONE))
            continue;
        *n = *n > a->count ? *n - a->count : 0;
    }
    for (size_t i = 0; i < walked.cap; i++) {
        const struct hl_u64map_slot *slot = &walked.slots[i];
        if (!slot->key || !slot->value)
            continue;
        uint32_t type_id = (uint32_t)slot->key;
        hl_alloc_count u = {.type_id = type_id, .heap = HL_GEN_0,
                            .flags = HL_ALLOC_FLAG_UNREPORTED, .count = slot->value,
                            .bytes = slot->value * c->type_sizes[type_id]};
        if (!hl_vec_push(counts, &u))
            c->model_failures++;
    }
    hl_u64map_release(&walked);
}

/* The census of gen0 at this GC's start (census.h): the interval's small-object allocations,
 * one flagged entry per class. */
static void census_counts(collector *c, const hl_gc_capture *g, id_vec *counts) {
    for (size_t i = 0; i < g->n_census; i++) {
        hl_alloc_count e = {.type_id = hl_collector_type_id(c, g->census[i].class_id),
                            .heap = HL_GEN_0, .flags = HL_ALLOC_FLAG_CENSUS,
                            .count = g->census[i].count, .bytes = g->census[i].bytes};
        if (!hl_vec_push(counts, &e))
            c->model_failures++;
        c->census_allocs += e.count;
        c->census_bytes += e.bytes;
    }
}

/* A GC followed by handles alone (follow.h) has no survivor ranges: its survived bytes are the
 * runtime's promoted bytes of the condemned generations (GCHeapStats) and its compaction the
 * runtime's (GCGlobalHeapHistory; without that event, whether a followed object moved). With
 * HEAPLENS_FOLLOW_CHECK both are compared at the GCs that have ranges. */
static void follow_gc_end(collector *c, const hl_gc_capture *g, hl_gc_end *e) {
    hl_follow *f = &c->p->followed;
    uint64_t promoted = 0;
    bool promoted_known = atomic_load_explicit(&g->promoted_known, memory_order_acquire);
    for (int gen = 0; gen < 5 && promoted_known; gen++)
        if (g->condemned_mask >> gen & 1)
            promoted += atomic_load_explicit(&g->promoted[gen], memory_order_relaxed);
    bool compacted_known = atomic_load_explicit(&g->compacted_known, memory_order_acquire);
    bool compacted = atomic_load_explicit(&g->compacted, memory_order_relaxed);
    if (g->ranges_taken) {
        if (f->check && compacted_known)
            f->check_compacting[compacted == (g->moved_ranges != 0)]++;
        if (f->check && promoted_known) {
            f->check_promoted_bytes += promoted;
            f->check_survived_bytes += g->survived_bytes;
        }
        return;
    }
    e->flags |= HL_GC_FLAG_NO_RANGES;
    e->flags &= ~(uint32_t)HL_GC_FLAG_COMPACTING;
    bool moved = false;
    for (size_t i = 0; i < g->n_moves && !moved; i++)
        moved = g->moves[i].new_start != g->moves[i].old_start;
    if (compacted_known ? compacted : moved)
        e->flags |= HL_GC_FLAG_COMPACTING;
    e->survived_bytes = promoted;
    if (promoted_known)
        e->flags |= HL_GC_FLAG_SURVIVED_PROMOTED;
}

static void apply_gc(collector *c, hl_gc_capture *g) {
    /* No drain while the outbox waits until the model has applied this GC and its interval is
     * closed: allocations after the GC must not enter the model before it. */
    c->drain_while_waiting = false;
    drain_names(c); /* THREAD records before the counts that use their tids */
    hl_young_fate_reset(&c->young);
    c->deaths.n = c->promotions.n = c->handles_freed.n = 0;
    /* What the last snapshot named without following it leaves the records here: else it
     * would stay alive in them for good, beside its new id at the next snapshot. */
    for (size_t i = 0; i < c->unfollowed.n; i++) {
        uint64_t *death = hl_vec_append(&c->deaths);
        if (death)
            *death = ((const uint64_t *)c->unfollowed.p)[i];
        else
            c->model_failures++;
    }
    c->unfollowed.n = 0;

    gc_apply a = {.c = c};
    hm_gc_input in = {.gc = g->gc, .condemned_mask = g->condemned_mask,
                      .bounds_before = g->before, .n_bounds_before = g->n_before,
                      .bounds_after = g->after, .n_bounds_after = g->n_after,
                      .moves = g->moves, .n_moves = g->n_moves};
    hm_gc_sink sink = {.ctx = &a, .classified = sink_classified, .died = sink_died,
                       .survived = sink_survived, .classified_young = sink_classified_young,
                       .died_young = sink_died_young};
    /* Full mode: a young object's death needs no report of its own (no word written and read
     * back for each, most of a gen0 GC's objects) unless something hangs on it: a
     * WeakReference that owns a handle, or an object the young arrays could not take (its
     * death is sent). Every young object of the model is in the young arrays otherwise. */
    sink.young_deaths_in_classified =
        c->p->mode == HL_MODE_FULL && !c->weak_owned.count && !c->young.lost;
    /* ... and then the model writes each young object's fate straight into the young arrays'
     * fate bytes (the same encoding), in its young pass and as it places a survivor: no word
     * per object handed over and read back, no call per young survivor. */
    _Static_assert(HL_YOUNG_FATE(HL_GEN_LOH, HL_GEN_2) == HM_FATE(HM_GEN_LOH, HM_GEN_2) &&
                       (int)HL_GEN_NONE == (int)HM_GEN_UNKNOWN,
                   "the model writes the young arrays' fate bytes");
    if (sink.young_deaths_in_classified) {
        sink.young_fates = c->young.fate;
        sink.young_fates_first = c->young.first;
        sink.young_fates_n = c->young.n;
    }
    hm_gc_stats stats = {0};
    /* A GC the model did not apply (input lost, or the whole GC lost: a gap in the ordinals)
     * leaves its addresses stale. Full mode has no walk to find its objects again, so no later
     * GC is applied as if the model were whole: each is marked incomplete, its counts exact. */
    bool stays_stale = c->p->mode == HL_MODE_FULL || c->p->follow; /* no walk finds them again */
    if (stays_stale && (g->incomplete || g->gc != c->interval_gc + 1))
        c->model_stale = true;
    bool classified = !g->incomplete && !c->model_stale;
    if (classified) {
        uint64_t t0 = stat_ns(c);
        if (hm_model_apply_gc(c->model, &in, &sink, &stats) != HM_OK) {
            c->model_failures++;
            classified = false;
            c->model_stale = stays_stale;
        }
        c->model_ns += stat_ns(c) - t0;
        c->anomalies += stats.anomalies;
    }
    /* Allocations of this interval: the arrays, and those counted without room in them. */
    bool incomplete = !classified || c->young.lost;
    uint64_t t0 = stat_ns(c);
    id_vec counts;
    id_vec samples;
    hl_samples_close(c, &c->young, classified, &samples);
    hl_young_close(&c->young, classified, g->first_id_after, &counts, &c->survivors);
    /* Without ObjectAllocated (sampled mode) there are no reported allocations to subtract;
     * without MONITOR_GC at every GC (full mode without --handles) no gen0 walk to subtract
     * them from. */
    if (c->p->handles)
        unreported_counts(c, g, &counts);
    if (g->census_done)
        census_counts(c, g, &counts);
    c->aggregate_ns += stat_ns(c) - t0;
    c->interval_gc = g->gc;
    /* Sampled mode: the objects this GC found alive get their ids, before the snapshot reads
     * the model (so that its self-check covers them); sent after the handle kinds. */
    id_vec found_new = {.elem = sizeof(hl_discovered)};
    if (classified && c->p->gcs.discover) {
        uint64_t t1 = stat_ns(c);
        hl_discover_apply(c, g, &found_new);
        c->discover_apply_ns += stat_ns(c) - t1;
        c->discover_pause_ns += g->discover_ns;
        c->discover_found += g->n_found;
    }
    uint64_t live = hm_model_count(c->model), discovered_before = c->discovered;
    bool snapshot_given_up = c->final_missed.reason && g->snapshot_trigger;
    if (snapshot_given_up) { /* a detach past its bound: final_snapshot */
        g->snapshot_trigger = 0;
        c->final_missed.snapshots_skipped++;
    }
    /* The snapshot reads the model as this GC left it (and adds the objects it discovers). */
    struct hl_snapshot *snap = classified ? hl_snapshot_build(c, g) : NULL;
    /* From here the model may take allocations made after this GC while sending waits. */
    c->drain_while_waiting = true;

    hl_collector_flush_types(c);
    hl_samples_flush_names(c);
    hl_gc_start s = {.gc = g->gc, .generation = g->generation, .reason = g->reason,
                     .condemned_mask = g->condemned_mask, .start_mono_ns = g->start_ns,
                     .suspend_mono_ns = g->suspend_ns, .first_id_after = g->first_id_after,
                     .gc_reason = g->gc_reason,
                     .flags = g->gc_reason_known ? HL_GC_START_REASON_KNOWN : 0};
    sizes_by_generation(g->before, g->n_before, s.size_before);
    hl_outbox_put(&c->out, HL_REC_GC_START, &s, sizeof s, NULL, 0, NULL, 0);
    send_counts(c, g->gc, &counts);
    hl_samples_send(c, g->gc, &samples);
    hl_collector_put_survivors(c, g->gc, &c->survivors);
    hl_gc_deaths d = {.gc = g->gc};
    hl_collector_put_chunked(c, HL_REC_GC_DEATHS, &d, sizeof d, &d.count, c->deaths.p,
                             c->deaths.n, sizeof(uint64_t));
    hl_gc_promotions pr = {.gc = g->gc};
    hl_collector_put_chunked(c, HL_REC_GC_PROMOTIONS, &pr, sizeof pr, &pr.count,
                             c->promotions.p, c->promotions.n, sizeof(hl_promotion));
    hl_gc_handles_freed hf = {.gc = g->gc};
    hl_collector_put_chunked(c, HL_REC_GC_HANDLES_FREED, &hf, sizeof hf, &hf.count,
                             c->handles_freed.p, c->handles_freed.n, sizeof(uint64_t));

    hl_gc_end e = {.gc = g->gc, .end_mono_ns = g->end_ns,
                   .resume_mono_ns = atomic_load(&g->resume_ns), .survived_bytes = g->survived_bytes,
                   .moved_bytes = g->moved_bytes, .moved_ranges = g->moved_ranges,
                   .surviving_ranges = g->surviving_ranges, .census_ns = g->census_ns,
                   .census_objects = g->census_objects};
    if (classified)
        hl_roots_apply(c, g, &e);
    hl_discover_send(c, g, &found_new);
    uint32_t snapshot_sent = snap ? c->snapshots + 1 : 0; /* the number hl_snapshot_send gives */
    hl_snapshot_send(c, snap);
    /* The model as this GC left it, and the objects the snapshot discovered in it. */
    e.objects_live = live + (c->discovered - discovered_before);
    e.flags = (g->moved_ranges ? HL_GC_FLAG_COMPACTING : 0) |
              (incomplete ? HL_GC_FLAG_INCOMPLETE : 0) | (g->census_done ? HL_GC_FLAG_CENSUS : 0) |
              (g->snapshot_skipped ? HL_GC_FLAG_SNAPSHOT_SKIPPED : 0) |
              (snapshot_given_up ? HL_GC_FLAG_SNAPSHOT_GIVEN_UP : 0);
    if (c->p->followed.on)
        follow_gc_end(c, g, &e);
    sizes_by_generation(g->after, g->n_after, e.size_after);
    counters_fill(c, &e.counters);
    hl_outbox_put(&c->out, HL_REC_GC_END, &e, sizeof e, NULL, 0, NULL, 0);
    c->gcs_applied = g->gc;
    if (c->p->followed.on) {
        hl_follow_check(&c->p->followed, g);
        hl_follow_destroy(&c->p->followed, c->p->info, g);
        hl_follow_named_publish(&c->p->followed, g->gc);
    }
    hl_collector_triggers_gc(c, g, e.size_after, snapshot_sent);
}

/* ---- requests from the writer ------------------------------------------------------------- */

/* How long a detach waits for its ForceGC threads to leave the runtime (finish): a full GC of a
 * large heap under load takes seconds; one that never returns must not hold the detach for
 * good. */
#define FORCERS_WAIT_NS (30ull * 1000000000u)

/* What a ForceGC thread needs, its own: it may outlive the session (forcers.h), whose profiler
 * is then reset. */
typedef struct force_gc_ticket {
    ICorProfilerInfo *info;
    uint32_t generation; /* hl_forcers_enter's */
} force_gc_ticket;

static void *force_gc_main(void *arg) {
    force_gc_ticket *ticket = arg;
    /* Its own thread: ForceGC must not run on a thread with managed frames or callbacks on its
     * stack, and the runtime makes the calling thread a runtime thread for good. */
    info_force_gc(ticket->info);
    uint32_t generation = ticket->generation;
    hl_mem_free(ticket);
    hl_forcers_leave(generation); /* last: a detach waits for this thread to leave the runtime */
    return NULL;
}

void hl_collector_request_snapshot(hl_profiler *p, uint32_t trigger) {
    /* The forcer is counted before the request is seen: a GC of the program's that takes the
     * request then knows a forced GC is still to come (hl_forcers_request_taken). */
    force_gc_ticket *ticket = hl_mem_malloc(sizeof *ticket);
    if (ticket)
        *ticket = (force_gc_ticket){.info = p->info, .generation = hl_forcers_enter()};
    atomic_store(&p->snapshot_requested, trigger);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (!ticket || pthread_create(&t, &attr, force_gc_main, ticket) != 0) {
        atomic_store(&p->snapshot_requested, 0); /* a trigger's is asked again later */
        if (trigger != HL_SNAPSHOT_REQUESTED && p->collector) /* the collector thread's own */
            p->collector->trigger_pending = 0;
        if (ticket) {
            hl_forcers_leave(ticket->generation);
            hl_mem_free(ticket);
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
}

static void take_requests(collector *c) {
    int cmd;
    if (atomic_exchange(&c->p->attach_snapshot, false)) {
        hl_statics_before_gc(c); /* the thread statics of classes loaded before the attach */
        hl_collector_request_snapshot(c->p, HL_SNAPSHOT_REQUESTED);
    }
    while ((cmd = hl_outbox_read_command(&c->out)) > 0) {
        /* finish() no more: the callbacks are off (no GC of it would be seen), and a detach's
         * wait for the ForceGC threads is over (forcers.h). */
        if (cmd == HL_CMD_SNAPSHOT && !c->ending) {
            if (c->trigger_pending && atomic_load(&c->p->snapshot_requested) == c->trigger_pending)
                hl_collector_triggers_replaced(c); /* no GC took it: the request replaces it */
            hl_statics_before_gc(c); /* its thread statics named in this very snapshot */
            /* counted before the request is seen: a GC that takes it counts it (profiler.c) */
            atomic_fetch_add(&c->p->snapshot_commands, 1);
            hl_collector_request_snapshot(c->p, HL_SNAPSHOT_REQUESTED);
        }
        else if ((cmd == HL_CMD_DETACH || cmd == HL_CMD_DETACH_NOW) && c->p->attach) {
            if (cmd == HL_CMD_DETACH_NOW)
                c->detach_now = true; /* final_snapshot gives its wait up */
            atomic_store(&c->p->detach_requested, true);
        }
    }
}

/* ---- the loop -------------------------------------------------------------------------------- */

/* One pass: returns true when it did any work. */
static bool pass(collector *c) {
    hl_profiler *p = c->p;
    bool worked = false;
    drain_names(c);
    drain_checkpoints(c);
    for (;;) {
        /* Read the id counter before looking at the GC queue: a GC that starts after this read
         * has a boundary >= snapshot, so ids below the snapshot are safe to add now. */
        uint64_t snapshot = atomic_load_explicit(&p->next_id, memory_order_acquire);
        hl_gc_capture *g = hl_gc_peek(&p->gcs);
        bool stopping = atomic_load_explicit(&p->stopping, memory_order_acquire) || c->ending;
        bool finished = g && hl_gc_ready(&p->gcs, g, hl_now_ns(), RESUME_GRACE_NS, stopping);
        uint64_t limit = g ? g->first_id_after : snapshot;
        if (!finished && limit > snapshot)
            limit = snapshot;
        if (drain(c, limit))
            worked = true;
        if (!finished)
            break;
        apply_gc(c, g);
        hl_gc_pop(&p->gcs);
        worked = true;
        /* The writer's requests between GCs: a program whose GCs come faster than they are
         * applied (a snapshot at every GC.Collect of a program that calls it in a loop) keeps
         * this loop going for good, and a detach read only after it was never read. Once one
         * is asked, a pass applies one GC: the detach's waits check their bounds between. */
        take_requests(c);
        if (atomic_load(&p->detach_requested))
            break;
    }
    spill_for_waiters(c);
    if (hl_outbox_send(&c->out))
        worked = true;
    take_requests(c);
    hl_collector_triggers_tick(c);
    return worked;
}

static void print_stats(collector *c, uint64_t shutdown_ns) {
    hl_profiler *p = c->p;
    hl_counters k;
    counters_fill(c, &k);
    struct rusage ru = thread_rusage();
    uint64_t walk_hist[HL_WALK_HIST_BINS];
    for (uint32_t i = 0; i < HL_WALK_HIST_BINS; i++)
        walk_hist[i] = atomic_load(&p->sampling.walk_hist[i]);
    fprintf(stderr,
            "heaplens: allocs_seen=%llu counted=%llu drained=%llu drained_while_waiting=%llu "
            "ns_per_event=%.1f model_apply_ms=%.1f aggregate_ms=%.1f outbox_wait_ms=%.1f "
            "pool_chunks_max=%u/%u young_cap=%zu allocs_dropped_buffer=%llu "
            "allocs_dropped_writer=%llu writer_lost=%llu gcs=%u exit_wait_ms=%.1f cpu_ms=%.1f "
            "wakeups=%llu samples_seen=%llu samples_taken=%llu samples_linked=%llu "
            "samples_followed=%llu samples_dropped=%llu samples_budgeted=%llu "
            "frames=%u stacks=%u frames_unresolved=%llu walk_failures=%llu (0x%x) "
            "walk_us_per_sample=%.1f walk_us_p50=%.2f frames_per_walk=%.1f thread_waits=%llu "
            "thread_wait_ms=%.1f "
            "spilled=%llu forcers_left=%u minflt=%llu sys_ms=%.1f\n",
            (unsigned long long)k.allocs_seen, (unsigned long long)c->counted,
            (unsigned long long)c->drained,
            (unsigned long long)c->drained_waiting,
            c->drained ? (double)c->drain_ns / (double)c->drained : 0.0, c->model_ns / 1e6,
            c->aggregate_ns / 1e6, c->out.wait_ns / 1e6, hl_tbufs_chunks_max(&p->rings),
            p->rings.n_chunks, c->young.cap, (unsigned long long)k.allocs_dropped_buffer,
            (unsigned long long)k.allocs_dropped_writer, (unsigned long long)k.writer_lost,
            c->gcs_applied, (hl_now_ns() - shutdown_ns) / 1e6, cpu_ns() / 1e6,
            (unsigned long long)c->wakeups,
            (unsigned long long)atomic_load(&p->sampling.seen),
            (unsigned long long)c->samples_taken, (unsigned long long)c->samples_linked,
            (unsigned long long)c->samples_followed,
            (unsigned long long)atomic_load(&p->sampling.dropped),
            (unsigned long long)atomic_load(&p->sampling.budgeted), c->frames.n_frames,
            c->frames.n_stacks, (unsigned long long)c->frames.unresolved,
            (unsigned long long)atomic_load(&p->sampling.walk_failures),
            (unsigned)atomic_load(&p->sampling.walk_failure_hr),
            c->samples_taken ? atomic_load(&p->sampling.walk_ns) / 1e3 / (double)c->samples_taken
                             : 0.0,
            hl_walk_hist_median_us(walk_hist),
            c->samples_taken
                ? (double)atomic_load(&p->sampling.walk_frames) / (double)c->samples_taken
                : 0.0,
            (unsigned long long)k.thread_waits, k.thread_wait_ns / 1e6,
            (unsigned long long)c->spilled, c->forcers_left.threads,
            (unsigned long long)ru.ru_minflt, ru.ru_stime.tv_sec * 1e3 + ru.ru_stime.tv_usec / 1e3);
    /* What the GC captures held while not yet applied: the memory the snapshots' walks bound
     * (snapshot_policy.h), and the policies' snapshots that bound cost. */
    fprintf(stderr,
            "heaplens: captures: held_peak_bytes=%llu walks_held_peak_bytes=%llu "
            "walks_held_max_bytes=%llu snapshots_held_peak=%llu snapshots_held_max=%u "
            "snapshots_skipped_queued=%llu collector_heap_peak_bytes=%llu\n",
            (unsigned long long)atomic_load(&p->gcs.held_peak_bytes),
            (unsigned long long)atomic_load(&p->gcs.walks_held_peak_bytes),
            (unsigned long long)HL_SNAPSHOT_WALKS_HELD_MAX_BYTES,
            (unsigned long long)atomic_load(&p->gcs.snapshots_held_peak), HL_SNAPSHOTS_HELD_MAX,
            (unsigned long long)atomic_load(&p->gcs.snapshots_skipped),
            (unsigned long long)hl_mem_stats_get().heap_peak_bytes);
    if (p->gcs.discover)
        fprintf(stderr,
                "heaplens: discovery: found=%llu new=%llu pause_ms=%.2f (%.1f ns per found "
                "object, inside GCs) apply_ms=%.2f (%.1f ns per found object, collector thread)\n",
                (unsigned long long)c->discover_found, (unsigned long long)c->discovered_at_gcs,
                c->discover_pause_ns / 1e6,
                c->discover_found ? (double)c->discover_pause_ns / (double)c->discover_found : 0.0,
                c->discover_apply_ns / 1e6,
                c->discover_found ? (double)c->discover_apply_ns / (double)c->discover_found : 0.0);
    if (p->followed.on) { /* the GC thread's counters: figures, not state */
        hl_follow *f = &p->followed;
        fprintf(stderr,
                "heaplens: follow: handles=%llu create_failures=%llu fallback=%d lookups=%llu "
                "died=%llu destroyed=%llu released=%llu ranges_gcs=%llu handle_gcs=%llu "
                "lookup_ms=%.2f (%.1f ns of CPU per lookup, inside GCs) check_agree=%llu "
                "check_disagree=%llu check_compacting_agree=%llu check_compacting_disagree=%llu "
                "check_promoted_bytes=%llu check_survived_bytes=%llu\n",
                (unsigned long long)atomic_load(&f->created),
                (unsigned long long)atomic_load(&f->create_failures),
                (int)atomic_load(&f->fallback), (unsigned long long)f->lookups,
                (unsigned long long)f->died, (unsigned long long)f->destroyed,
                (unsigned long long)f->released,
                (unsigned long long)f->ranges_gcs, (unsigned long long)f->handle_gcs,
                f->lookup_ns / 1e6, f->lookups ? (double)f->lookup_ns / (double)f->lookups : 0.0,
                (unsigned long long)f->check_agree, (unsigned long long)f->check_disagree,
                (unsigned long long)f->check_compacting[1],
                (unsigned long long)f->check_compacting[0],
                (unsigned long long)f->check_promoted_bytes,
                (unsigned long long)f->check_survived_bytes);
    }
    if (p->gcs.tls_on)
        fprintf(stderr, "heaplens: class loads: classes=%llu ms=%.1f thread_statics=%u\n",
                (unsigned long long)atomic_load(&p->gcs.tls_fields.classes_seen),
                atomic_load(&p->gcs.tls_fields.class_ns) / 1e6,
                (unsigned)atomic_load(&p->gcs.tls_fields.n));
    if (p->gcs.census.on) /* read while GCs may still run: figures, not state */
        fprintf(stderr,
                "heaplens: census: threads=%u helpers=%u walks_cut=%llu walks_redone=%llu "
                "walks_helped=%llu\n",
                p->gcs.census.threads, p->gcs.census.n_helpers,
                (unsigned long long)p->gcs.census.walks_split,
                (unsigned long long)p->gcs.census.walks_redone,
                (unsigned long long)p->gcs.census.walks_helped);
    if (p->gcs.census.on && p->gcs.census.floor) /* HEAPLENS_CENSUS_FLOOR (census.h) */
        fprintf(stderr,
                "heaplens: census floor: walks=%llu walk_cpu_ms=%.1f helpers_cpu_ms=%.1f "
                "walk_wall_ms=%.1f read_cpu_ms=%.1f gen0_mib=%.1f objects=%llu\n",
                (unsigned long long)p->gcs.census.floor_walks,
                p->gcs.census.floor_walk_cpu_ns / 1e6,
                atomic_load(&p->gcs.census.floor_helper_cpu_ns) / 1e6,
                p->gcs.census.floor_walk_wall_ns / 1e6, p->gcs.census.floor_read_cpu_ns / 1e6,
                p->gcs.census.floor_bytes / 1048576.0,
                (unsigned long long)p->gcs.census.floor_objects);
}

/* The writer was lost, so the stream cannot say how the run ended: the end file (wire/hl_wire.h)
 * beside `socket_path` says it instead — a stream header and the RUN_END that was not sent. On
 * the collector thread, at the run's end; written under a temporary name and renamed, so a
 * reader sees it whole or not at all. Best effort: a failure costs only the explanation. */
static void end_file_write(const char *socket_path, const hl_run_end *e) {
    const char *slash = strrchr(socket_path, '/');
    char path[sizeof ((hl_profiler *)0)->socket_path + 32], tmp[sizeof path + 8];
    if (!slash || snprintf(path, sizeof path, "%.*s/end.%ld", (int)(slash - socket_path),
                           socket_path, (long)getpid()) >= (int)sizeof path ||
        snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return;
    struct {
        hl_stream_header h;
        hl_rec_header r;
        hl_run_end e;
    } file = {.h = {.version = HL_STREAM_VERSION},
              .r = {.type = HL_REC_RUN_END, .size = sizeof(hl_run_end)},
              .e = *e};
    memcpy(file.h.magic, HL_STREAM_MAGIC, 8);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    bool whole = write(fd, &file, sizeof file) == (ssize_t)sizeof file;
    close(fd);
    if (!whole || rename(tmp, path) != 0)
        unlink(tmp);
}

static void finish(collector *c, bool detaching) {
    hl_profiler *p = c->p;
    uint64_t shutdown_ns = p->shutdown_ns ? p->shutdown_ns : hl_now_ns();
    /* Shutdown, or a detach with the callbacks off: no thread allocates any more (none that
     * we see), so drain everything. A finished GC is applied without waiting for its resume:
     * after a detach's `active = false` RuntimeResumeFinished reports nothing. */
    c->ending = true;
    while (pass(c))
        ;
    /* A detach: the ForceGC threads leave the runtime before it is asked to unload us (its
     * rules: clr-profiler-facts.md §7.5), waited for here, before the end record, so that a
     * wait given up is said (in the recording: HL_REC_FORCERS_LEFT; HEAPLENS_STATS=1:
     * forcers_left=; a line on stderr). No new one starts from now on (take_requests). */
    if (detaching) {
        if (hl_forcers_wait_told(FORCERS_WAIT_NS, &c->forcers_left)) {
            fprintf(stderr, "heaplens: %u ForceGC thread%s still in the runtime after %llu s: "
                            "detaching all the same\n", c->forcers_left.threads,
                    c->forcers_left.threads == 1 ? "" : "s",
                    (unsigned long long)(FORCERS_WAIT_NS / 1000000000u));
            hl_outbox_put(&c->out, HL_REC_FORCERS_LEFT, &c->forcers_left, sizeof c->forcers_left,
                          NULL, 0, NULL, 0);
        }
    }
    drain(c, UINT64_MAX);
    drain_names(c);
    drain_checkpoints(c);
    /* The tail interval: allocations after the last GC sent, counted unclassified (no GC has
     * told their heap or fate). The writer's tail is its last stored GC + 1: a GC that started
     * but never finished while the callbacks were on (one under way at a detach) or a GC lost
     * is not in the stream, and the samples taken after it belong to this tail. */
    uint32_t last_gc = c->gcs_applied;
    id_vec counts;
    c->drain_while_waiting = false;
    hl_young_close(&c->young, false, c->young.first, &counts, &c->survivors);
    id_vec samples;
    hl_samples_close(c, &c->young, false, &samples); /* no survivors: no object ids */
    hl_collector_flush_types(c);
    hl_samples_flush_names(c);
    send_counts(c, last_gc + 1, &counts);
    hl_samples_send(c, last_gc + 1, &samples);
    hl_rejit_send(c, p->rejit);
    if (c->final_missed.reason) /* final_snapshot gave the last one up: said before the end */
        hl_outbox_put(&c->out, HL_REC_FINAL_SNAPSHOT_MISSED, &c->final_missed,
                      sizeof c->final_missed, NULL, 0, NULL, 0);
    /* Wait for the writer to take the backlog as long as it makes progress, so that the run's
     * end record arrives: it tells the writer the recording is complete. */
    hl_outbox_flush(&c->out, c->out.stall_ms);
    hl_run_end e = {.end_unix_ns = hl_now_unix_ns(), .end_mono_ns = hl_now_ns(),
                    .gcs = c->gcs_applied, .shutdown_mono_ns = shutdown_ns,
                    .program_peak_rss_bytes = program_peak_rss_bytes()};
    counters_fill(c, &e.counters);
    hl_outbox_put(&c->out, HL_REC_RUN_END, &e, sizeof e, NULL, 0, NULL, 0);
    hl_outbox_flush(&c->out, c->out.stall_ms);
    if (c->out.lost) {
        counters_fill(c, &e.counters); /* the end record's own drop included */
        e.flags = c->out.stalled ? HL_RUN_END_FLAG_WRITER_STALLED : 0;
        end_file_write(c->p->socket_path, &e);
    }
    /* Every GC that finished is applied and its dead handles destroyed: the process runs on
     * after a detach, so the live ones go too (at Shutdown the process ends with them). */
    if (detaching)
        hl_follow_close(&p->followed, p->info);
    const char *stats = getenv("HEAPLENS_STATS");
    if (stats && strcmp(stats, "1") == 0)
        print_stats(c, shutdown_ns);
}

static void collector_free(collector *c);

/* How long a detach waits for its last snapshot: the GC it forces comes after every GC the
 * program started before it, and the collector applies them in order. A program whose GCs come
 * faster than they are applied (a snapshot at each GC.Collect of a loop that calls it) leaves
 * it behind for good: past this bound the session ends without the snapshot, and says why. */
#define FINAL_SNAPSHOT_WAIT_NS (10ull * 1000000000u)
/* ... unless no GC of the program's is left before the snapshot's: that one itself takes the time
 * (the runtime's walk of a heap of many millions of objects, the snapshot built from it), and
 * it is waited for up to this. */
#define FINAL_SNAPSHOT_WAIT_MAX_NS (60ull * 1000000000u)

/* An attach session ends (heaplens asked, or the writer is gone): the last snapshot, while the
 * writer takes it. It is the first GC applied after the forced one started, whoever started it.
 * Waits at most FINAL_SNAPSHOT_WAIT_NS while behind (FINAL_SNAPSHOT_WAIT_MAX_NS else), not at
 * all once the writer said HL_CMD_DETACH_NOW; then `final_missed` says why it was not taken,
 * and the GCs still queued are applied without their snapshots (apply_gc), so that the detach
 * ends. */
static void final_snapshot(collector *c) {
    hl_profiler *p = c->p;
    if (c->out.lost)
        return;
    uint64_t start = hl_now_ns();
    bool forced = !c->detach_now; /* asked at once from the start: no GC forced for it */
    if (forced)
        hl_collector_request_snapshot(p, HL_SNAPSHOT_REQUESTED);
    uint32_t wanted = 0;
    for (;;) {
        if (c->out.lost || atomic_load(&p->stopping))
            return; /* nothing to say it to, or the process ends: Shutdown's finish says the rest */
        if (forced && !wanted && hl_forcers_in_runtime() == 0)
            wanted = p->gcs.gcs_started; /* the forced GC has started (or ForceGC failed) */
        if (wanted && c->gcs_applied >= wanted)
            return;
        if (c->detach_now) { /* HL_CMD_DETACH_NOW (take_requests, in pass) */
            uint32_t started = p->gcs.gcs_started;
            c->final_missed = (hl_final_snapshot_missed){
                .reason = HL_FINAL_SNAPSHOT_GIVEN_UP,
                .gcs_behind = started > c->gcs_applied ? started - c->gcs_applied : 0,
                .waited_ms = (uint32_t)((hl_now_ns() - start) / 1000000u)};
            return;
        }
        uint64_t now = hl_now_ns();
        /* Behind: GCs the program started before the snapshot's are still to be applied (before
         * ForceGC returns, more than the one GC that may be its own). */
        uint64_t queued = atomic_load_explicit(&p->gcs.written, memory_order_acquire) -
                          atomic_load_explicit(&p->gcs.read, memory_order_relaxed);
        bool behind = wanted ? wanted > c->gcs_applied + 1 : queued > 1;
        if (now - start >= (behind ? FINAL_SNAPSHOT_WAIT_NS : FINAL_SNAPSHOT_WAIT_MAX_NS)) {
            uint32_t started = p->gcs.gcs_started;
            c->final_missed = (hl_final_snapshot_missed){
                .reason = wanted ? HL_FINAL_SNAPSHOT_BEHIND : HL_FINAL_SNAPSHOT_NO_GC,
                .gcs_behind = started > c->gcs_applied ? started - c->gcs_applied : 0,
                .waited_ms = (uint32_t)((now - start) / 1000000u)};
            return;
        }
        if (!pass(c)) {
            struct pollfd fd = {.fd = p->wake_fd, .events = POLLIN};
            poll(&fd, 1, 1);
        }
    }
}

/* After the session's end record: unload. The callbacks are off, every ForceGC thread has left
 * the runtime (or finish gave its wait up: forcers.h), and this thread touches the runtime no
 * more after the request (the library stays mapped: RTLD_NODELETE). ProfilerDetachSucceeded, on
 * the runtime's detach thread, joins us. */
static void request_detach(hl_profiler *p) {
    HRESULT hr = info_request_profiler_detach(p->info, 0);
    if (HR_FAILED(hr) && (p->rejit || hl_resident_is())) {
        /* --count: the runtime keeps a profiler that recompiled code until the process exits.
         * It stays dormant: no callback beyond what the runtime forces (clearing ENABLE_REJIT
         * may be refused), and waits for a later `heaplens attach` (resident.h). */
        if (HR_FAILED(info_set_event_mask2(p->info, 0, 0)))
            info_set_event_mask2(p->info, COR_PRF_ENABLE_REJIT, 0);
        hl_resident_wait(p);
    } else if (HR_FAILED(hr)) {
        fprintf(stderr, "heaplens: the runtime refused to unload the collector (0x%08x); it stays "
                        "loaded and inactive\n", (unsigned)hr);
    } else {
        hl_resident_unlisten();
    }
}

/* How long an idle pass sleeps, in ms. Where ObjectAllocated reports every allocation (full
 * mode, the census's check) 1 ms: a millisecond of allocations is far below the pool (about 4M
 * events), which fills only when the collector thread itself cannot keep up, not for want of
 * waking up. Sampled and attach sessions push only samples, LOH/POH allocations and names: 10 ms
 * is still far below the pool, and a thousand wakeups a second cost the program more than the
 * drain (each one preempts an allocating thread on a busy machine; bench/README.md, "Sampled
 * mode's cost"). A waiting thread gets the 1 ms; the checkpoint and name rings wake the thread
 * when half full (hl_collector_wake), and the writer's requests come on the socket. */
static int idle_poll_ms(hl_profiler *p) {
    bool every_allocation = p->mode == HL_MODE_FULL || (p->mode == HL_MODE_SAMPLED && !p->follow);
    return every_allocation || hl_tbufs_waiters(&p->rings) > 0 ? 1 : 10;
}

#define IDLE_DOZE_MAX_MS 100 /* an idle sampled or attach session's longest sleep */

/* The next idle sleep after `prev_ms` (0: the last pass worked): idle_poll_ms, and while passes
 * find nothing in a sampled or attach session, twice the last up to IDLE_DOZE_MAX_MS. A wake-up
 * costs 15-25 us of CPU on a VM whatever the pass does (a bare 10 ms poll: 16-21 us here): an
 * idle program paid 2.5 ms a second for 100 of them. Dozing loses no promptness that matters:
 * a GC that ends meanwhile wakes the thread at its resume (hl_gc_doze_begin), the writer's
 * requests and Shutdown wake it, and samples or names wait in bounded buffers. Not with a
 * periodic snapshot trigger (its tick), nor with a thread waiting for a chunk. */
static unsigned idle_next_ms(collector *c, unsigned prev_ms) {
    hl_profiler *p = c->p;
    unsigned base = (unsigned)idle_poll_ms(p);
    if (base < 10 || !prev_ms || p->policy.every_ns)
        return base;
    unsigned next = prev_ms * 2 < IDLE_DOZE_MAX_MS ? prev_ms * 2 : IDLE_DOZE_MAX_MS;
    return next > base && hl_gc_doze_begin(&p->gcs) ? next : base;
}

/* Polls `fds` (the first is wake_fd) for `ms`; a wake is consumed (the eventfd stays readable
 * until read: every later poll would return at once). */
static void idle_wait(collector *c, struct pollfd *fds, nfds_t n, int ms) {
    hl_profiler *p = c->p;
    if (poll(fds, n, ms) > 0 && (fds[0].revents & POLLIN)) {
        uint64_t woken;
        if (read(p->wake_fd, &woken, sizeof woken) < 0) {
            /* nothing to reset: the next pass finds out */
        }
    }
    hl_gc_doze_end(&p->gcs);
    c->wakeups++;
}

static void *collector_main(void *arg) {
    collector *c = arg;
    hl_profiler *p = c->p;
    hl_tbufs_set_consumer(&p->rings);
    send_run_start(c);
    while (!atomic_load_explicit(&p->stopping, memory_order_acquire) &&
           !atomic_load(&p->detach_requested)) {
        if (p->attach && c->out.lost) {
            atomic_store(&p->detach_requested, true); /* the writer is gone: detach by ourselves */
            break;
        }
        /* The program's threads are stopped for a GC: its pause is the program's latency, so
         * the GC threads get the cores (on 2 shared cores the drain and the writer's socket
         * made gen0 pauses 3x longer). Nothing new can be allocated meanwhile; the backlog
         * waits a millisecond or so (an idle period: idle_poll_ms). Draining resumes at
         * GarbageCollectionFinished. A thread waiting for a chunk is never left waiting on this
         * (an event pushed inside the GC). */
        if (hl_gc_in_progress(&p->gcs) && hl_tbufs_waiters(&p->rings) == 0) {
            struct pollfd fd = {.fd = p->wake_fd, .events = POLLIN};
            c->idle_ms = 0; /* not idle: a GC is under way */
            idle_wait(c, &fd, 1, idle_poll_ms(p));
            continue;
        }
        if (pass(c)) {
            c->idle_ms = 0;
            continue;
        }
        /* Idle: sleep until the socket can take more or has a request, Shutdown wakes us, or
         * the idle period passes (the chunks are polled: allocation callbacks never make a
         * system call). */
        struct pollfd fds[2] = {{.fd = p->wake_fd, .events = POLLIN},
                                {.fd = c->out.fd, .events = POLLIN}};
        if (hl_outbox_pending(&c->out))
            fds[1].events |= POLLOUT;
        c->idle_ms = idle_next_ms(c, c->idle_ms);
        idle_wait(c, fds, c->out.fd >= 0 ? 2 : 1, (int)c->idle_ms);
    }
    bool detaching = !atomic_load(&p->stopping);
    if (detaching) {
        final_snapshot(c);
        p->active = false; /* callbacks become no-ops; what they copied is drained by finish */
        hl_eventpipe_stop(p); /* no event may reach us once the runtime has unloaded us */
        hl_rejit_stop(p->rejit); /* --count: no new request; finish sends the counts */
    }
    if (detaching && (p->rejit || hl_resident_is()))
        hl_resident_listen_early(); /* before the end record: resident.h */
    finish(c, detaching);
    if (detaching)
        hl_rejit_revert(p->rejit); /* the original code back (rejit.h) */
    hl_tbufs_close(&p->rings); /* a thread that still finds no chunk drops: nobody drains now */
    atomic_store(&p->gcs.closed, true); /* ... and a GC that finds the queue full is lost */
    collector_free(c); /* its type names release metadata interfaces: before the detach */
    if (detaching && !atomic_load(&p->stopping))
        request_detach(p);
    return NULL;
}

static size_t outbox_capacity(void) {
    const char *mb = getenv("HEAPLENS_BUFFER_MB");
    long v = mb ? strtol(mb, NULL, 10) : 0;
    return (size_t)(v > 0 && v <= 16384 ? v : HL_OUTBOX_DEFAULT_MB) << 20;
}

static void collector_free(collector *c) {
    hl_outbox_release(&c->out);
    hl_fields_release(&c->fields);
    hl_statics_release(&c->statics);
    hl_type_names_release(&c->names);
    hm_model_free(c->model);
    hl_u64map_release(&c->types);
    hl_u64map_release(&c->handles);
    hl_u64map_release(&c->weak_pending);
    hl_u64map_release(&c->weak_owned);
    hl_vec_release(&c->handles_freed);
    hl_mem_free(c->type_traits);
    hl_mem_free(c->type_sizes);
    hl_young_release(&c->young);
    hl_vec_release(&c->deaths);
    hl_vec_release(&c->unfollowed);
    hl_vec_release(&c->promotions);
    hl_vec_release(&c->handle_events);
    hl_vec_release(&c->pending_types);
    hl_young_packed_release(&c->survivors);
    hl_vec_release(&c->samples);
    hl_frames_release(&c->frames);
    hl_mem_free(c->threads);
    hl_mem_free(c);
}

int hl_collector_start(hl_profiler *p) {
    collector *c = hl_mem_calloc(1, sizeof *c);
    if (!c)
        return ENOMEM;
    c->p = p;
    const char *stats = getenv("HEAPLENS_STATS");
    c->stats = stats && strcmp(stats, "1") == 0;
    hl_young_init(&c->young, 1);
    c->drain_while_waiting = true;
    c->deaths.elem = sizeof(uint64_t);
    c->unfollowed.elem = sizeof(uint64_t);
    c->promotions.elem = sizeof(hl_promotion);
    c->handle_events.elem = sizeof(handle_event);
    c->pending_types.elem = sizeof(hl_type);
    hl_young_packed_init(&c->survivors, CHUNK, CHUNK_BYTES);
    c->samples.elem = sizeof(hl_alloc_sample);
    hl_frames_init(&c->frames);
    hl_u64map_init(&c->types);
    hl_u64map_init(&c->handles);
    hl_u64map_init(&c->weak_pending);
    hl_u64map_init(&c->weak_owned);
    c->handles_freed.elem = sizeof(uint64_t);
    hl_type_names_init(&c->names, p->info);
    hl_fields_init(&c->fields);
    hl_statics_init(&c->statics);
    c->model = hm_model_new_with(&hl_mem_model_allocator);
    if (!c->model || hl_outbox_init(&c->out, p->socket_path, outbox_capacity()) != 0) {
        collector_free(c);
        return ENOMEM;
    }
    c->out.on_wait = wait_drain;
    c->out.on_lost = on_record_lost;
    c->out.ctx = c;
    p->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    /* The collector thread takes no signals: they belong to the program. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int err = pthread_create(&p->thread, NULL, collector_main, c);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err) {
        collector_free(c);
        return err;
    }
    pthread_setname_np(p->thread, "heaplens");
    p->collector = c;
    p->thread_started = true;
    return 0;
}

/* An absolute CLOCK_REALTIME time `ms` from now, for pthread_timedjoin_np. */
static struct timespec realtime_after_ms(unsigned ms) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    return until;
}

/* Joins the collector thread once. With p->exit_note, a wait past exit_note_ms is said on
 * stderr: the program's code is done but its process waits here for the writer to take the
 * collector's backlog (seconds on a program whose objects live a little, a loaded machine), and
 * without a word a terminal looks hung. Said from here because heaplens sees only a process
 * that has not exited yet; the program's stderr is heaplens' own under record (only its own
 * program says it: record's -q, --json, attach and descendants leave exit_note off). */
static void collector_join(hl_profiler *p) {
    if (!p->thread_started || atomic_exchange(&p->thread_joined, true))
        return;
    bool joined = false;
    if (p->exit_note) {
        struct timespec until = realtime_after_ms(p->exit_note_ms);
        joined = pthread_timedjoin_np(p->thread, NULL, &until) == 0;
        if (!joined)
            fprintf(stderr, "heaplens: the program has ended; its collector is handing the rest "
                            "of the recording to heaplens (the summary follows)\n");
    }
    if (!joined)
        pthread_join(p->thread, NULL);
    p->collector = NULL; /* freed by the thread itself */
}

void hl_collector_wake(hl_profiler *p) {
    uint64_t one = 1;
    if (p->thread_started && p->wake_fd > 0 && write(p->wake_fd, &one, sizeof one) < 0) {
        /* the thread polls anyway (idle_poll_ms) */
    }
}

void hl_collector_stop(hl_profiler *p) {
    if (!p->thread_started)
        return;
    p->shutdown_ns = hl_now_ns();
    atomic_store_explicit(&p->stopping, true, memory_order_release);
    hl_collector_wake(p);
    /* The chunks and the GC queue stay: other threads may still be inside a callback while the
     * process ends. Only the collector thread's own state goes (the thread frees it). */
    collector_join(p);
}

void hl_collector_stop_within(hl_profiler *p, unsigned ms) {
    if (!p->thread_started || atomic_exchange(&p->thread_joined, true))
        return;
    p->shutdown_ns = hl_now_ns();
    atomic_store_explicit(&p->stopping, true, memory_order_release);
    hl_collector_wake(p);
    struct timespec until = realtime_after_ms(ms);
    if (pthread_timedjoin_np(p->thread, NULL, &until) == 0)
        p->collector = NULL; /* freed by the thread itself; else it is left to the exit */
}

void hl_session_reset(hl_profiler *p) {
    collector_join(p);
    if (p->wake_fd > 0)
        close(p->wake_fd);
    hl_gc_queue_release(&p->gcs);
    hl_tbufs_release(&p->rings);
    hl_follow_release(&p->followed);
    const ICorProfilerCallback11Vtbl *vtbl = p->vtbl;
    memset(p, 0, sizeof *p);
    p->vtbl = vtbl;
    p->wake_fd = -1;
    hl_forcers_session_new(); /* a ForceGC thread of the last session counts itself off no more */
}
