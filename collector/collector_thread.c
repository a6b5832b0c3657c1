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
#include "collector/collector.h"

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

#include "collector/outbox.h"
#include "collector/type_names.h"
#include "heapmodel/hm_model.h"
#include "wire/hl_wire.h"

#define ALLOC_BATCH 4096
#define CHUNK_IDS 65536          /* ids per GC_DEATHS / GC_YOUNG_FATE record */
#define SHUTDOWN_STALL_MS 10000  /* give up on a writer that takes nothing for this long */

/* ClassID -> dense type id; open addressing, linear probing, load <= 1/2. */
typedef struct type_slot {
    ClassID class_id; /* 0 = empty (no ClassID is 0) */
    uint32_t type_id;
} type_slot;
typedef struct type_map {
    type_slot *slots;
    size_t cap, count;
} type_map;

typedef struct id_vec {
    void *p;
    size_t n, cap, elem;
} id_vec;

typedef struct known_thread {
    ThreadID thread;
    uint32_t os_tid;
    char name[64];
} known_thread;

/* State owned by the collector thread. */
typedef struct collector {
    hl_profiler *p;
    hm_model *model;
    type_map types;
    hl_type_names names;
    hl_outbox out;
    hl_alloc batch[ALLOC_BATCH];
    size_t n_batch;
    uint64_t young_first;  /* first id allocated after the last applied GC */
    uint32_t gcs_applied;
    uint64_t anomalies;
    uint64_t model_failures;
    /* Per-GC scratch. */
    uint8_t *fate;
    size_t fate_cap;
    id_vec deaths, promotions;
    known_thread *threads;
    size_t n_threads, cap_threads;
    char name[4096];
} collector;

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

static bool vec_push(id_vec *v, const void *elem) {
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

/* ---- records ---------------------------------------------------------------------------- */

static void put_str(collector *c, uint16_t type, const void *head, size_t n_head, const char *s) {
    uint32_t len = (uint32_t)strlen(s);
    hl_outbox_put(&c->out, type, head, n_head, &len, sizeof len, s, len);
}

static void flush_batch(collector *c) {
    if (!c->n_batch)
        return;
    hl_alloc_batch h = {.count = (uint32_t)c->n_batch};
    hl_outbox_put(&c->out, HL_REC_ALLOC_BATCH, &h, sizeof h, c->batch, c->n_batch * sizeof c->batch[0],
                  NULL, 0);
    c->n_batch = 0;
}

static void counters_fill(collector *c, hl_counters *k) {
    hl_profiler *p = c->p;
    memset(k, 0, sizeof *k);
    k->allocs_seen = atomic_load(&p->next_id) - 1;
    k->allocs_dropped = hl_tbufs_dropped(&p->rings);
    k->gc_events_dropped = atomic_load(&p->gcs.lost) + c->model_failures;
    k->records_dropped = c->out.records_dropped;
    k->bytes_dropped = c->out.bytes_dropped;
    k->model_anomalies = c->anomalies;
    k->threads_overflowed = atomic_load(&p->rings.overflowed) + atomic_load(&p->names_dropped);
}

static void send_run_start(collector *c) {
    hl_profiler *p = c->p;
    hl_stream_header h = {.version = HL_STREAM_VERSION};
    memcpy(h.magic, HL_STREAM_MAGIC, 8);
    hl_outbox_put_raw(&c->out, &h, sizeof h);

    char cmdline[4096] = "";
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, cmdline, sizeof cmdline - 1);
        close(fd);
        for (ssize_t i = 0; i < n; i++)
            if (cmdline[i] == 0)
                cmdline[i] = ' ';
        cmdline[n > 0 ? n - 1 : 0] = 0;
    }
    const char *producer = "heaplens " HEAPLENS_VERSION;
    hl_run_start rs = {.pid = (uint32_t)getpid(), .mode = HL_MODE_FULL,
                       .start_unix_ns = p->start_unix_ns, .start_mono_ns = p->start_mono_ns,
                       .flags = p->empty ? HL_RUN_FLAG_EMPTY_PROFILER : 0, .pointer_size = 8};
    uint32_t l1 = (uint32_t)strlen(cmdline), l2 = (uint32_t)strlen(p->runtime_version),
             l3 = (uint32_t)strlen(producer);
    size_t n = sizeof rs + 12 + l1 + l2 + l3;
    uint8_t *buf = malloc(n);
    if (!buf)
        return;
    uint8_t *q = buf;
    memcpy(q, &rs, sizeof rs), q += sizeof rs;
    memcpy(q, &l1, 4), q += 4, memcpy(q, cmdline, l1), q += l1;
    memcpy(q, &l2, 4), q += 4, memcpy(q, p->runtime_version, l2), q += l2;
    memcpy(q, &l3, 4), q += 4, memcpy(q, producer, l3);
    hl_outbox_put(&c->out, HL_REC_RUN_START, buf, n, NULL, 0, NULL, 0);
    free(buf);
}

/* ---- types -------------------------------------------------------------------------------- */

static size_t type_slot_index(ClassID cls, size_t cap) {
    return (size_t)((cls >> 3) * 0x9E3779B97F4A7C15ull) & (cap - 1);
}

static bool type_map_grow(type_map *m) {
    size_t cap = m->cap ? m->cap * 2 : 1024;
    type_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return false;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].class_id)
            continue;
        size_t j = type_slot_index(m->slots[i].class_id, cap);
        while (slots[j].class_id)
            j = (j + 1) & (cap - 1);
        slots[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return true;
}

static uint32_t type_id_of(collector *c, ClassID cls) {
    type_map *m = &c->types;
    if (m->count * 2 >= m->cap && !type_map_grow(m))
        return 0;
    size_t j = type_slot_index(cls, m->cap);
    while (m->slots[j].class_id) {
        if (m->slots[j].class_id == cls)
            return m->slots[j].type_id;
        j = (j + 1) & (m->cap - 1);
    }
    uint32_t id = (uint32_t)++m->count;
    m->slots[j].class_id = cls;
    m->slots[j].type_id = id;
    flush_batch(c); /* the TYPE record must precede the allocations that use it */
    hl_type t = {.type_id = id, .class_id = cls};
    t.flags = hl_type_name(&c->names, cls, c->name, sizeof c->name);
    put_str(c, HL_REC_TYPE, &t, sizeof t, c->name);
    return id;
}

/* ---- allocations ---------------------------------------------------------------------------- */

static void on_alloc(void *ctx, const hl_alloc_event *ev, uint32_t os_tid) {
    collector *c = ctx;
    if (hm_model_add(c->model, ev->addr, ev->id) != HM_OK)
        c->model_failures++;
    uint32_t type_id = type_id_of(c, ev->class_id); /* may flush the batch: before indexing it */
    c->batch[c->n_batch++] = (hl_alloc){.id = ev->id, .size = ev->size, .type_id = type_id,
                                        .os_tid = os_tid};
    if (c->n_batch == ALLOC_BATCH)
        flush_batch(c);
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
    } else if (!vec_push(&a->c->deaths, &id)) {
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
        if (!vec_push(&a->c->promotions, &pr))
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
    flush_batch(c);
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
    if (have_fate)
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
    hl_outbox_put(&c->out, HL_REC_GC_START, &s, sizeof s, NULL, 0, NULL, 0);

    for (size_t off = 0; have_fate && off < n_young; off += CHUNK_IDS) {
        size_t n = n_young - off < CHUNK_IDS ? n_young - off : CHUNK_IDS;
        hl_gc_young_fate f = {.gc = g->gc, .count = (uint32_t)n, .first_id = first + off};
        hl_outbox_put(&c->out, HL_REC_GC_YOUNG_FATE, &f, sizeof f, c->fate + off, n, NULL, 0);
    }
    const uint64_t *deaths = c->deaths.p;
    for (size_t off = 0; off < c->deaths.n; off += CHUNK_IDS) {
        size_t n = c->deaths.n - off < CHUNK_IDS ? c->deaths.n - off : CHUNK_IDS;
        hl_gc_deaths d = {.gc = g->gc, .count = (uint32_t)n};
        hl_outbox_put(&c->out, HL_REC_GC_DEATHS, &d, sizeof d, deaths + off, n * 8, NULL, 0);
    }
    const hl_promotion *promos = c->promotions.p;
    for (size_t off = 0; off < c->promotions.n; off += CHUNK_IDS) {
        size_t n = c->promotions.n - off < CHUNK_IDS ? c->promotions.n - off : CHUNK_IDS;
        hl_gc_promotions pr = {.gc = g->gc, .count = (uint32_t)n};
        hl_outbox_put(&c->out, HL_REC_GC_PROMOTIONS, &pr, sizeof pr, promos + off,
                      n * sizeof *promos, NULL, 0);
    }

    hl_gc_end e = {.gc = g->gc, .end_mono_ns = g->end_ns, .survived_bytes = g->survived_bytes,
                   .moved_bytes = g->moved_bytes, .moved_ranges = g->moved_ranges,
                   .surviving_ranges = g->surviving_ranges,
                   .objects_live = hm_model_count(c->model)};
    e.flags = (g->moved_ranges ? HL_GC_FLAG_COMPACTING : 0) | (incomplete ? HL_GC_FLAG_INCOMPLETE : 0);
    sizes_by_generation(g->after, g->n_after, e.size_after);
    counters_fill(c, &e.counters);
    hl_outbox_put(&c->out, HL_REC_GC_END, &e, sizeof e, NULL, 0, NULL, 0);

    c->young_first = end;
    c->gcs_applied = g->gc;
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
        bool finished = g && atomic_load_explicit(&g->finished, memory_order_acquire);
        uint64_t limit = g ? g->first_id_after : snapshot;
        if (!finished && limit > snapshot)
            limit = snapshot;
        if (hl_tbufs_drain(&p->rings, limit, on_alloc, c))
            worked = true;
        if (!finished)
            break;
        apply_gc(c, g);
        hl_gc_pop(&p->gcs);
        worked = true;
    }
    if (!worked)
        flush_batch(c); /* quiet moment: let the writer see what we have */
    if (hl_outbox_send(&c->out))
        worked = true;
    return worked;
}

static void finish(collector *c) {
    hl_profiler *p = c->p;
    /* Shutdown: no thread allocates any more, so drain everything. */
    while (pass(c))
        ;
    hl_tbufs_drain(&p->rings, UINT64_MAX, on_alloc, c);
    flush_batch(c);
    drain_names(c);
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
        /* Idle: sleep until the socket can take more, Shutdown wakes us, or 1 ms passes (the
         * rings are polled; allocation callbacks never make a system call to wake us). */
        struct pollfd fds[2] = {{.fd = p->wake_fd, .events = POLLIN},
                                {.fd = c->out.fd, .events = POLLOUT}};
        poll(fds, hl_outbox_pending(&c->out) && c->out.fd >= 0 ? 2 : 1, 1);
    }
    finish(c);
    return NULL;
}

static size_t outbox_capacity(void) {
    const char *mb = getenv("HEAPLENS_BUFFER_MB");
    long v = mb ? strtol(mb, NULL, 10) : 0;
    return (size_t)(v > 0 && v <= 16384 ? v : 256) << 20;
}

int hl_collector_start(hl_profiler *p) {
    collector *c = calloc(1, sizeof *c);
    if (!c)
        return ENOMEM;
    c->p = p;
    c->model = hm_model_new();
    c->young_first = 1;
    c->deaths.elem = sizeof(uint64_t);
    c->promotions.elem = sizeof(hl_promotion);
    hl_type_names_init(&c->names, p->info);
    if (!c->model || hl_outbox_init(&c->out, p->socket_path, outbox_capacity()) != 0) {
        hm_model_free(c->model);
        free(c);
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
        hl_outbox_release(&c->out);
        hm_model_free(c->model);
        free(c);
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
    /* The runtime may still run finalizers on other threads after Shutdown; the rings and the
     * GC queue stay allocated (the process is ending), only the collector's own state goes. */
    hl_outbox_release(&c->out);
    hl_type_names_release(&c->names);
    hm_model_free(c->model);
    free(c->fate);
    free(c->deaths.p);
    free(c->promotions.p);
    free(c->types.slots);
    free(c->threads);
    free(c);
}
