/* hm_naive.h — an obviously correct, slow model with the contract of hm_model.h.
 *
 * A flat array of objects and linear scans, written straight from the contract text, for the
 * differential test and the benchmark ratio. The range validation rules (what is dropped) are
 * implemented independently of hm_ranges.c: by repeated selection of the smallest candidate and
 * comparison against every kept range, instead of sort-and-sweep.
 */
#ifndef HEAPLENS_HM_NAIVE_H
#define HEAPLENS_HM_NAIVE_H

#include "heapmodel/hm_model.h"

typedef struct hm_naive hm_naive;

hm_naive *hm_naive_new(void);
void hm_naive_free(hm_naive *n);
int hm_naive_add(hm_naive *n, uint64_t addr, uint64_t id);
int hm_naive_apply_gc(hm_naive *n, const hm_gc_input *in, const hm_gc_sink *sink,
                      hm_gc_stats *stats);
bool hm_naive_lookup(const hm_naive *n, uint64_t addr, uint64_t *id, uint32_t *generation);
bool hm_naive_foreach(const hm_naive *n, hm_object_fn fn, void *ctx);
size_t hm_naive_count(const hm_naive *n);

#endif /* HEAPLENS_HM_NAIVE_H */
