/* hm_test.h — the little the heapmodel tests share: CHECK, a recording sink, state snapshots. */
#ifndef HEAPLENS_HM_TEST_H
#define HEAPLENS_HM_TEST_H

#include "heapmodel/hm_model.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Fails the test binary with file:line and the condition. */
#define CHECK(cond)                                     \
    do {                                                \
        if (!(cond))                                    \
            hm_test_fail(__FILE__, __LINE__, #cond, 0, 0); \
    } while (0)

/* Same, printing both sides (as unsigned 64-bit numbers). */
#define CHECK_EQ(a, b)                                                                   \
    do {                                                                                 \
        uint64_t hm_a_ = (uint64_t)(a), hm_b_ = (uint64_t)(b);                           \
        if (hm_a_ != hm_b_)                                                              \
            hm_test_fail(__FILE__, __LINE__, #a " == " #b, hm_a_, hm_b_);                \
    } while (0)

/* hm_model_check must hold. */
#define CHECK_MODEL(m)                                                  \
    do {                                                                \
        char hm_why_[256];                                              \
        if (!hm_model_check((m), hm_why_, sizeof(hm_why_)))             \
            hm_test_fail(__FILE__, __LINE__, hm_why_, 0, 0);            \
    } while (0)

_Noreturn void hm_test_fail(const char *file, int line, const char *what, uint64_t a, uint64_t b);

/* One sink callback. kind: 'c' classified (a = heap), 'd' died (a = gen_before),
 * 's' survived (a = gen_before, b = gen_after). */
typedef struct hm_event {
    char kind;
    uint64_t id;
    uint32_t a, b;
} hm_event;

typedef struct hm_rec {
    hm_event *ev;
    size_t n, cap;
    bool saw_outcome;     /* a `died` or `survived` was recorded */
    bool classified_late; /* a `classified` came after a `died` or `survived` */
    size_t batches, empty_batches; /* calls of the batch forms, and those with nothing */
} hm_rec;

/* A sink recording into r (reset r with hm_rec_clear between GCs). */
hm_gc_sink hm_rec_sink(hm_rec *r);
/* The same with the batch forms set too (classified_young, died_young): it records each batch's
 * reports as the per-object forms would, so both sinks' recordings compare equal. */
hm_gc_sink hm_rec_batch_sink(hm_rec *r);
/* The batch sink with young_deaths_in_classified: call hm_rec_quiet_resolve after the GC to
 * turn the condemned young objects that did not survive into the 'd' events the other sinks
 * record, with their heap for gen_before (the words carry no more): compare with a recording
 * passed through hm_rec_young_deaths_as_heaps. */
hm_gc_sink hm_rec_quiet_sink(hm_rec *r);
void hm_rec_quiet_resolve(hm_rec *r);
/* The quiet sink with young_fates over ids [first, first + n) (the caller's bytes): after the GC
 * call hm_rec_to_fates with them, then hm_rec_quiet_resolve. */
hm_gc_sink hm_rec_fates_sink(hm_rec *r, uint8_t *fates, uint64_t first, size_t n);
/* What the collector keeps per young id of [first, first + n) (its fate bytes): out[] holds the
 * bytes before (all HM_FATE(HM_GEN_UNKNOWN, HM_GEN_UNKNOWN) for a recording of the per-object
 * forms; the model's own for hm_rec_fates_sink), then the recording's events of those ids are
 * applied and leave it: 'c' sets (heap, heap), then 'd' the generation after to
 * HM_GEN_UNKNOWN and 's' to its gen_after. Two recordings of one GC, one through the fates sink
 * and one through another sink, then give equal bytes and (after quiet resolution) equal
 * events. */
void hm_rec_to_fates(hm_rec *r, uint64_t first, size_t n, uint8_t *out);
/* 'd' events of objects classified in the same GC: gen_before 0..2 becomes HM_GEN_0. */
void hm_rec_young_deaths_as_heaps(hm_rec *r);
void hm_rec_clear(hm_rec *r);
void hm_rec_release(hm_rec *r);
/* Sorts by (kind, id, a, b) so that two recordings can be compared. */
void hm_rec_sort(hm_rec *r);
bool hm_rec_equal(const hm_rec *x, const hm_rec *y);
/* True when no (kind, id) pair occurs twice; r must be sorted. */
bool hm_rec_ids_unique(const hm_rec *r);
/* The event of `kind` for `id`, or NULL. */
const hm_event *hm_rec_find(const hm_rec *r, char kind, uint64_t id);
size_t hm_rec_count(const hm_rec *r, char kind);

typedef struct hm_obj {
    uint64_t addr, id;
    uint32_t gen;
} hm_obj;

typedef struct hm_objs {
    hm_obj *v;
    size_t n, cap;
} hm_objs;

/* hm_object_fn appending to an hm_objs. */
bool hm_objs_push(void *ctx, uint64_t addr, uint64_t id, uint32_t generation);
void hm_objs_release(hm_objs *o);
/* The model's objects through foreach (checks ascending order and count on the way). */
void hm_objs_of_model(hm_objs *o, const hm_model *m);
/* The same without hm_model_count, which would sync the model's young hash: for tests that
 * need the duplicate checks of the adds left to the next GC. */
void hm_objs_of_model_nosync(hm_objs *o, const hm_model *m);
bool hm_objs_equal(const hm_objs *x, const hm_objs *y);

#endif /* HEAPLENS_HM_TEST_H */
