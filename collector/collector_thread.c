/* collector_thread.c — the collector's own thread: everything that is not a mere copy.
 *
 * Order is what makes the model right. Allocation ids are taken from one counter, and a GC can
 * only start while no thread is inside ObjectAllocated, so GC n splits the ids: every id below
 * its first_id_after was allocated before it (at a pre-GC address), every other id after it (at
 * a post-GC address). The loop therefore drains the thread rings only up to the boundary of the
 * oldest GC not yet applied, applies that GC once it has finished, and moves on. The same order
 * holds on the wire (see wire/hl_wire.h).
 */
#define _GNU_SOURCE
#include "collector/collector_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define SHUTDOWN_STALL_MS 10000 /* give up on a writer that takes nothing for this long */
#define RESUME_GRACE_NS 50000000 /* wait this long after a GC for the end of its pause */

uint64_t hl_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t hl_now_unix_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool hl_vec_push(id_vec *v, const void *elem) {
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 4096;
        void *grown = realloc(v->p, cap * v->elem);
        if (!grown)
            return false;
        v->p = grown;
        v->cap = cap;
    }
    memcpy((char *)v->p + v->n * v->elem, elem, v->elem);
    v->n++;
    return true;
}

void hl_vec_release(id_vec *v) {
    free(v->p);
    v->p = NULL;
    v->n = v->cap = 0;
}

/* ---- records ---------------------------------------------------------------------------- */

static void put_str(collector *c, uint16_t type, const void *head, size_t n_head, const char *s) {
    uint32_t len = (uint32_t)strlen(s);
    hl_outbox_put(&c->out, type, head, n_head, &len, sizeof len, s, len);
}

void hl_collector_flush_batch(collector *c) {
    if (!c->n_batch)
        return;
    hl_alloc_batch h = {.count = (uint32_t)c->n_batch};
    hl_outbox_put(&c->out, HL_REC_ALLOC_BATCH, &h, sizeof h, c->batch,
                  c->n_batch * sizeof c->batch[0], NULL, 0);
    c->n_batch = 0;
}

void hl_collector_put_chunked(collector *c, uint16_t type, void *head, size_t head_size,
                              uint32_t *count_field, const void *elems, size_t n, size_t elem_size) {
    for (size_t off = 0; off < n; off += CHUNK) {
        size_t k = n - off < CHUNK ? n - off : CHUNK;
        *count_field = (uint32_t)k;
        hl_outbox_put(&c->out, type, head, head_size, (const char *)elems + off * elem_size,
                      k * elem_size, NULL, 0);
    }
}

static void counters_fill(collector *c, hl_counters *k) {
    hl_profiler *p = c->p;
    memset(k, 0, sizeof *k);
    k->allocs_seen = hl_tbufs_allocations(&p->rings);
    k->allocs_dropped = hl_tbufs_dropped(&p->rings);
    k->gc_events_dropped = atomic_load(&p->gcs.lost) + c->model_failures;
    k->records_dropped = c->out.records_dropped;
    k->bytes_dropped = c->out.bytes_dropped;
    k->model_anomalies = c->anomalies;
    k->threads_overflowed = atomic_load(&p->rings.overflowed) + atomic_load(&p->names_dropped);
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
    hl_run_start rs = {.pid = (uint32_t)getpid(), .mode = HL_MODE_FULL,
                       .start_unix_ns = p->start_unix_ns, .start_mono_ns = p->start_mono_ns,
                       .flags = p->empty ? HL_RUN_FLAG_EMPTY_PROFILER : 0, .pointer_size = 8};
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

/* ---- types -------------------------------------------------------------------------------- */

uint32_t hl_collector_type_id(collector *c, ClassID cls) {
    uint64_t *known = hl_u64map_get(&c->types, cls);
    if (known)
        return (uint32_t)*known;
    uint32_t id = ++c->n_types;
    if (!hl_u64map_put(&c->types, cls, id))
        c->model_failures++; /* resolved again next time: a duplicate TYPE record, harmless */
    hl_collector_flush_batch(c); /* the TYPE record must precede the allocations that use it */
    hl_type t = {.type_id = id, .class_id = cls};
    t.flags = hl_type_name(&c->names, cls, c->name, sizeof c->name);
    put_str(c, HL_REC_TYPE, &t, sizeof t, c->name);
    return id;
}

/* ---- events from the rings ---------------------------------------------------------------- */

static void on_event(void *ctx, const hl_alloc_event *ev, uint32_t os_tid) {
    collector *c = ctx;
    switch (HL_EV_KIND(ev)) {
    case HL_EV_ALLOC: {
        if (hm_model_add(c->model, ev->addr, ev->id) != HM_OK)
            c->model_failures++;
        uint32_t type_id = hl_collector_type_id(c, ev->class_id); /* may flush the batch */
        c->batch[c->n_batch++] = (hl_alloc){.id = ev->id, .size = HL_EV_SIZE(ev),
                                            .type_id = type_id, .os_tid = os_tid};
        if (c->n_batch == ALLOC_BATCH)
            hl_collector_flush_batch(c);
        break;
    }
    case HL_EV_HANDLE_CREATED:
    case HL_EV_HANDLE_DESTROYED:
        if (!hl_vec_push(&c->handle_events, ev))
            c->model_failures++;
        break;
    }
}

static int by_sequence(const void *a, const void *b) {
    uint64_t x = ((const hl_alloc_event *)a)->id, y = ((const hl_alloc_event *)b)->id;
    return (x > y) - (x < y);
}

/* Drains the rings up to `limit`. The rings are read one after another, so events of different
 * threads arrive out of order. That is harmless for allocations (distinct addresses) but not
 * for handles: a handle destroyed on one thread and its address reused by another thread's
 * HandleCreated must be applied in that order. So handle events wait until the whole drain is
 * in and are applied sorted by their sequence number (also after every allocation they may
 * target). */
static uint64_t drain(collector *c, uint64_t limit) {
    uint64_t n = hl_tbufs_drain(&c->p->rings, limit, on_event, c);
    hl_alloc_event *ev = c->handle_events.p;
    qsort(ev, c->handle_events.n, sizeof *ev, by_sequence);
    for (size_t i = 0; i < c->handle_events.n; i++) {
        if (HL_EV_KIND(&ev[i]) == HL_EV_HANDLE_CREATED)
            hl_handles_created(c, ev[i].addr, ev[i].class_id);
        else
            hl_handles_destroyed(c, ev[i].addr);
    }
    c->handle_events.n = 0;
    return n;
}

/* A thread's name and its OS thread come in separate callbacks, in either order (a Thread is
 * usually named before it starts). Merge them and send a THREAD record once both are known. */
static known_thread *thread_entry(collector *c, ThreadID id) {
    for (size_t i = 0; i < c->n_threads; i++)
        if (c->threads[i].thread == id)
            return &c->threads[i];
    if (c->n_threads == c->cap_threads) {
        size_t cap = c->cap_threads ? c->cap_threads * 2 : 64;
        known_thread *grown = realloc(c->threads, cap * sizeof *grown);
        if (!grown)
            return NULL;
        c->threads = grown;
        c->cap_threads = cap;
    }
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
            put_str(c, HL_REC_THREAD, &rec, sizeof rec, t->name);
        }
    }
    atomic_store_explicit(&p->names_read, r, memory_order_release);
}

/* ---- GCs -------------------------------------------------------------------------------- */

typedef struct gc_apply {
    collector *c;
    uint64_t first, end; /* young ids */
} gc_apply;

static void sink_classified(void *ctx, uint64_t id, uint32_t heap) {
    gc_apply *a = ctx;
    if (id >= a->first && id < a->end)
        a->c->fate[id - a->first] = HL_FATE(heap, heap);
}

static void sink_died(void *ctx, uint64_t id, uint32_t gen_before) {
    gc_apply *a = ctx;
    (void)gen_before;
    if (id >= a->first && id < a->end) {
        uint8_t *f = &a->c->fate[id - a->first];
        *f = HL_FATE(HL_FATE_HEAP(*f), HL_GEN_NONE);
    } else if (!hl_vec_push(&a->c->deaths, &id)) {
        a->c->model_failures++;
    }
}

static void sink_survived(void *ctx, uint64_t id, uint32_t gen_before, uint32_t gen_after) {
    gc_apply *a = ctx;
    if (id >= a->first && id < a->end) {
        uint8_t *f = &a->c->fate[id - a->first];
        *f = HL_FATE(HL_FATE_HEAP(*f), gen_after);
    } else if (gen_after != gen_before) {
        hl_promotion pr = {.id = id, .generation = gen_after};
        if (!hl_vec_push(&a->c->promotions, &pr))
            a->c->model_failures++;
    }
}

static void sizes_by_generation(const hm_gen_range *r, size_t n, uint64_t out[HL_GEN_COUNT_GC]) {
    memset(out, 0, sizeof(uint64_t) * HL_GEN_COUNT_GC);
    for (size_t i = 0; i < n; i++)
        if (r[i].generation < HL_GEN_COUNT_GC)
            out[r[i].generation] += r[i].length;
}

static void apply_gc(collector *c, hl_gc_capture *g) {
    hl_collector_flush_batch(c);
    uint64_t first = c->young_first, end = g->first_id_after > first ? g->first_id_after : first;
    size_t n_young = (size_t)(end - first);
    if (n_young > c->fate_cap) {
        uint8_t *grown = realloc(c->fate, n_young);
        if (grown) {
            c->fate = grown;
            c->fate_cap = n_young;
        }
    }
    bool have_fate = n_young <= c->fate_cap;
    if (have_fate && n_young)
        memset(c->fate, HL_FATE_UNKNOWN, n_young);
    c->deaths.n = c->promotions.n = 0;

    gc_apply a = {.c = c, .first = first, .end = have_fate ? end : first};
    hm_gc_input in = {.gc = g->gc, .condemned_mask = g->condemned_mask,
                      .bounds_before = g->before, .n_bounds_before = g->n_before,
                      .bounds_after = g->after, .n_bounds_after = g->n_after,
                      .moves = g->moves, .n_moves = g->n_moves};
    hm_gc_sink sink = {.ctx = &a, .classified = sink_classified, .died = sink_died,
                       .survived = sink_survived};
    hm_gc_stats stats = {0};
    bool incomplete = g->incomplete || !have_fate;
    if (!g->incomplete) {
        if (hm_model_apply_gc(c->model, &in, &sink, &stats) != HM_OK) {
            c->model_failures++;
            incomplete = true;
        }
        c->anomalies += stats.anomalies;
    }

    hl_gc_start s = {.gc = g->gc, .generation = g->generation, .reason = g->reason,
                     .condemned_mask = g->condemned_mask, .start_mono_ns = g->start_ns,
                     .suspend_mono_ns = g->suspend_ns, .first_id_after = g->first_id_after};
    sizes_by_generation(g->before, g->n_before, s.size_before);
    uint64_t dropped_before = c->out.records_dropped;
    hl_outbox_put(&c->out, HL_REC_GC_START, &s, sizeof s, NULL, 0, NULL, 0);

    for (size_t off = 0; have_fate && off < n_young; off += CHUNK) {
        size_t k = n_young - off < CHUNK ? n_young - off : CHUNK;
        hl_gc_young_fate f = {.gc = g->gc, .count = (uint32_t)k, .first_id = first + off};
        hl_outbox_put(&c->out, HL_REC_GC_YOUNG_FATE, &f, sizeof f, c->fate + off, k, NULL, 0);
    }
    hl_gc_deaths d = {.gc = g->gc};
    hl_collector_put_chunked(c, HL_REC_GC_DEATHS, &d, sizeof d, &d.count, c->deaths.p,
                             c->deaths.n, sizeof(uint64_t));
    hl_gc_promotions pr = {.gc = g->gc};
    hl_collector_put_chunked(c, HL_REC_GC_PROMOTIONS, &pr, sizeof pr, &pr.count,
                             c->promotions.p, c->promotions.n, sizeof(hl_promotion));

    hl_gc_end e = {.gc = g->gc, .end_mono_ns = g->end_ns,
                   .resume_mono_ns = atomic_load(&g->resume_ns), .survived_bytes = g->survived_bytes,
                   .moved_bytes = g->moved_bytes, .moved_ranges = g->moved_ranges,
                   .surviving_ranges = g->surviving_ranges};
    if (!incomplete)
        hl_roots_apply(c, g, &e);
    /* Details that found no room in the outbox make the GC incomplete for the writer too. (A
     * snapshot that loses records is the writer's to discard; the GC keeps its data.) */
    bool details_lost = c->out.records_dropped != dropped_before;
    if (!incomplete)
        hl_snapshot_send(c, g);
    incomplete = incomplete || details_lost;
    e.objects_live = hm_model_count(c->model);
    e.flags = (g->moved_ranges ? HL_GC_FLAG_COMPACTING : 0) | (incomplete ? HL_GC_FLAG_INCOMPLETE : 0);
    sizes_by_generation(g->after, g->n_after, e.size_after);
    counters_fill(c, &e.counters);
    hl_outbox_put(&c->out, HL_REC_GC_END, &e, sizeof e, NULL, 0, NULL, 0);

    c->young_first = end;
    c->gcs_applied = g->gc;
}

/* ---- requests from the writer ------------------------------------------------------------- */

static void *force_gc_main(void *arg) {
    hl_profiler *p = arg;
    /* Its own thread: ForceGC must not run on a thread with managed frames or callbacks on its
     * stack, and the runtime makes the calling thread a runtime thread for good. */
    info_force_gc(p->info);
    return NULL;
}

static void take_requests(collector *c) {
    int cmd;
    while ((cmd = hl_outbox_read_command(&c->out)) > 0) {
        if (cmd != HL_CMD_SNAPSHOT)
            continue;
        atomic_store(&c->p->snapshot_requested, true);
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, force_gc_main, c->p) != 0)
            atomic_store(&c->p->snapshot_requested, false);
        pthread_attr_destroy(&attr);
    }
}

/* ---- the loop -------------------------------------------------------------------------------- */

/* One pass: returns true when it did any work. */
static bool pass(collector *c) {
    hl_profiler *p = c->p;
    bool worked = false;
    drain_names(c);
    for (;;) {
        /* Read the id counter before looking at the GC queue: a GC that starts after this read
         * has a boundary >= snapshot, so ids below the snapshot are safe to add now. */
        uint64_t snapshot = atomic_load_explicit(&p->next_id, memory_order_acquire);
        hl_gc_capture *g = hl_gc_peek(&p->gcs);
        bool stopping = atomic_load_explicit(&p->stopping, memory_order_acquire);
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
    }
    if (!worked)
        hl_collector_flush_batch(c); /* quiet moment: let the writer see what we have */
    if (hl_outbox_send(&c->out))
        worked = true;
    take_requests(c);
    return worked;
}

static void finish(collector *c) {
    /* Shutdown: no thread allocates any more, so drain everything. */
    while (pass(c))
        ;
    drain(c, UINT64_MAX);
    hl_collector_flush_batch(c);
    drain_names(c);
    /* Wait for the writer to take the backlog (bounded by the stall limit) so that the run's
     * end record finds room: it tells the writer the recording is complete. */
    hl_outbox_flush(&c->out, SHUTDOWN_STALL_MS);
    hl_run_end e = {.end_unix_ns = hl_now_unix_ns(), .end_mono_ns = hl_now_ns(),
                    .gcs = c->gcs_applied};
    counters_fill(c, &e.counters);
    hl_outbox_put(&c->out, HL_REC_RUN_END, &e, sizeof e, NULL, 0, NULL, 0);
    hl_outbox_flush(&c->out, SHUTDOWN_STALL_MS);
}

static void *collector_main(void *arg) {
    collector *c = arg;
    hl_profiler *p = c->p;
    send_run_start(c);
    while (!atomic_load_explicit(&p->stopping, memory_order_acquire)) {
        if (pass(c))
            continue;
        /* Idle: sleep until the socket can take more or has a request, Shutdown wakes us, or
         * 1 ms passes (the rings are polled: allocation callbacks never make a system call). */
        struct pollfd fds[2] = {{.fd = p->wake_fd, .events = POLLIN},
                                {.fd = c->out.fd, .events = POLLIN}};
        if (hl_outbox_pending(&c->out))
            fds[1].events |= POLLOUT;
        poll(fds, c->out.fd >= 0 ? 2 : 1, 1);
    }
    finish(c);
    return NULL;
}

static size_t outbox_capacity(void) {
    const char *mb = getenv("HEAPLENS_BUFFER_MB");
    long v = mb ? strtol(mb, NULL, 10) : 0;
    return (size_t)(v > 0 && v <= 16384 ? v : 256) << 20;
}

static void collector_free(collector *c) {
    hl_outbox_release(&c->out);
    hl_type_names_release(&c->names);
    hm_model_free(c->model);
    hl_u64map_release(&c->types);
    hl_u64map_release(&c->handles);
    hl_vec_release(&c->deaths);
    hl_vec_release(&c->promotions);
    hl_vec_release(&c->handle_events);
    free(c->fate);
    free(c->threads);
    free(c);
}

int hl_collector_start(hl_profiler *p) {
    collector *c = calloc(1, sizeof *c);
    if (!c)
        return ENOMEM;
    c->p = p;
    c->young_first = 1;
    c->deaths.elem = sizeof(uint64_t);
    c->promotions.elem = sizeof(hl_promotion);
    c->handle_events.elem = sizeof(hl_alloc_event);
    hl_u64map_init(&c->types);
    hl_u64map_init(&c->handles);
    hl_type_names_init(&c->names, p->info);
    c->model = hm_model_new();
    if (!c->model || hl_outbox_init(&c->out, p->socket_path, outbox_capacity()) != 0) {
        collector_free(c);
        return ENOMEM;
    }
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
    return 0;
}

void hl_collector_stop(hl_profiler *p) {
    collector *c = p->collector;
    if (!c)
        return;
    atomic_store_explicit(&p->stopping, true, memory_order_release);
    uint64_t one = 1;
    if (p->wake_fd >= 0 && write(p->wake_fd, &one, sizeof one) < 0) {
        /* the thread polls every millisecond anyway */
    }
    pthread_join(p->thread, NULL);
    p->collector = NULL;
    /* The rings and the GC queue stay: other threads may still be inside a callback while the
     * process ends. Only the collector thread's own state goes. */
    collector_free(c);
}
