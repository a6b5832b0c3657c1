/* samples.c — allocation samples on the collector thread: read from the HL_EV_SAMPLE slots of
 * one thread (thread_buffers.h; a sample's slots always arrive together), frames
 * resolved and the stack interned (frames.h), linked to the object's allocation id in full mode,
 * and sent per GC interval (wire/hl_wire.h, ALLOC_SAMPLES). */
#include "collector/collector_internal.h"

#include <stdlib.h>
#include <string.h>

static const uint8_t heap_of_kind[4] = {HL_GEN_0, HL_GEN_LOH, HL_GEN_POH, HL_GEN_NONE};

static void sample_finish(collector *c, uint32_t os_tid) {
    uint32_t ids[HL_SAMPLE_MAX_FRAMES];
    uint32_t depth = 0;
    for (uint32_t i = 0; i < c->sample.got; i++) {
        uint32_t id = hl_frames_of_ip(&c->frames, &c->names, c->sample.ips[i]);
        if (id)
            ids[depth++] = id;
    }
    hl_alloc_sample *s = &c->sample.s;
    s->stack_id = hl_frames_intern_stack(&c->frames, ids, depth);
    if (c->sample.reported > c->sample.kept || depth < c->sample.got)
        s->flags |= HL_SAMPLE_FLAG_TRUNCATED;
    if (!hl_vec_push(&c->samples, s)) {
        atomic_fetch_add(&c->p->sampling.dropped, 1);
        return;
    }
    c->samples_taken++;
    /* Full mode: the object's ObjectAllocated follows on this thread (AllocationSampled and
     * AllocationTick are written inside the allocation, before the runtime tells the profiler). */
    c->link.waiting = s->object_id == 0 && c->sample.address != 0;
    c->link.os_tid = os_tid;
    c->link.address = c->sample.address;
    c->link.index = c->samples.n - 1;
}

/* Sampled mode follows the sample's object (collector/README.md, "Sampled mode follows its
 * samples"): the sample's id becomes the object's, at the address the sample names, before the
 * GC that ends its interval (sample ids come from the same counter as allocations). The model
 * then follows it like an allocation: survivor row, promotions, death. LOH and POH samples
 * wait for their ObjectAllocated instead (every such allocation is reported). */
static void sample_follow(collector *c, uint64_t id, uint64_t address, uint32_t os_tid) {
    if (hm_model_add(c->model, address, id) != HM_OK) {
        c->model_failures++;
        return;
    }
    hl_young_add_followed(&c->young, id, c->sample.s.type_id, os_tid, c->sample.s.size);
    c->sample.s.object_id = id;
    c->samples_followed++;
}

void hl_samples_on_event(collector *c, const hl_alloc_event *ev, uint32_t os_tid) {
    uint64_t id = ev[0].a, address = ev[1].a;
    c->sample.address = address;
    c->sample.kept = HL_SAMPLE_HEAD_FRAMES(ev);
    c->sample.reported = (uint32_t)ev[2].b;
    c->sample.got = 0;
    c->sample.s = (hl_alloc_sample){.size = ev[2].a,
                                    .amount = ev[3].a,
                                    .weight = (uint16_t)HL_SAMPLE_HEAD_WEIGHT(ev),
                                    .type_id = hl_collector_type_id(c, ev[1].b & HL_EV_LOW60),
                                    .os_tid = os_tid,
                                    .heap = heap_of_kind[HL_SAMPLE_HEAD_HEAP(ev)]};
    if (c->p->follow && address && c->sample.s.heap == HL_GEN_0 && hl_collector_follows_new(c))
        sample_follow(c, id, address, os_tid);
    const hl_alloc_event *f = ev + 4;
    for (uint32_t i = 0; i < c->sample.kept; i += 2, f++) {
        c->sample.ips[c->sample.got++] = (uintptr_t)f->a;
        if (i + 1 < c->sample.kept)
            c->sample.ips[c->sample.got++] = (uintptr_t)(f->b & HL_EV_LOW60);
    }
    sample_finish(c, os_tid);
}

void hl_samples_close(collector *c, const hl_young *y, bool classified, id_vec *out) {
    *out = c->samples;
    c->samples = (id_vec){.elem = sizeof(hl_alloc_sample)};
    c->link.waiting = false;
    hl_alloc_sample *s = out->p;
    for (size_t i = 0; i < out->n; i++)
        if (s[i].object_id && !(classified && hl_young_alive(y, s[i].object_id)))
            s[i].object_id = 0;
}

void hl_samples_flush_names(collector *c) {
    hl_frames *f = &c->frames;
    /* Sending may wait, and the drain that runs meanwhile may queue more: index, not pointer. */
    for (size_t i = 0; i < f->pending_frames.n; i++) {
        uint32_t id = ((const uint32_t *)f->pending_frames.p)[i];
        hl_collector_put_str(c, HL_REC_METHOD, hl_frames_method(f, id), sizeof(hl_method),
                             hl_frames_name(f, id));
    }
    f->pending_frames.n = 0;
    for (size_t i = 0; i < f->pending_stacks.n; i++) {
        uint32_t id = ((const uint32_t *)f->pending_stacks.p)[i];
        hl_stack h = {.stack_id = id};
        const uint32_t *ids = hl_frames_stack(f, id, &h.depth);
        hl_outbox_put(&c->out, HL_REC_STACK, &h, sizeof h, ids, h.depth * sizeof *ids, NULL, 0);
    }
    f->pending_stacks.n = 0;
}

void hl_samples_send(collector *c, uint32_t gc, id_vec *samples) {
    hl_sampling *sp = &c->p->sampling;
    if (c->p->stacks && (sp->source || samples->n)) {
        uint64_t budgeted = atomic_load(&sp->budgeted);
        hl_alloc_samples head = {
            .gc = gc, .source = sp->source,
            .mean_distance_bytes = sp->source == HL_SAMPLE_SOURCE_ALLOCATION_SAMPLED ||
                                           sp->source == HL_SAMPLE_SOURCE_OBJECT_ALLOCATED
                                       ? HL_ALLOC_SAMPLED_MEAN_BYTES : 0,
            .samples_budgeted = budgeted < UINT32_MAX ? (uint32_t)budgeted : UINT32_MAX,
            .samples_seen = atomic_load(&sp->seen),
            .samples_dropped = atomic_load(&sp->dropped) + c->samples_dropped_writer +
                               c->frames.failures};
        /* Every interval's record goes out, also one without samples (put_chunked sends
         * nothing for no elements): the counters are cumulative and may move without a sample
         * kept (all of an interval's samples dropped), and the writer's sampling row is only as
         * fresh as the last record. Each GC's, not only the tail's: the row is then right in
         * every GC's transaction, and a run cut short before its tail keeps the counts of its
         * last GC. 40 bytes per GC. */
        if (samples->n == 0)
            hl_outbox_put(&c->out, HL_REC_ALLOC_SAMPLES, &head, sizeof head, NULL, 0, NULL, 0);
        else
            hl_collector_put_chunked(c, HL_REC_ALLOC_SAMPLES, &head, sizeof head, &head.count,
                                     samples->p, samples->n, sizeof(hl_alloc_sample));
    }
    hl_vec_release(samples);
}
