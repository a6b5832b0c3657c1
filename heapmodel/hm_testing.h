/* hm_testing.h — fault injection for the heapmodel tests; exists only in the hlheapmodel_testing
 * library (compiled with HM_TESTING), never in the one the collector links. */
#ifndef HEAPLENS_HM_TESTING_H
#define HEAPLENS_HM_TESTING_H

#include "heapmodel/hm_model.h"

/* Lets the next n allocations of model m succeed and fails every one after; n < 0 disables
 * failing. Proves the HM_ERR_NOMEM promises (model unchanged, no callback). */
void hm_model_fail_after(hm_model *m, long n);

#endif /* HEAPLENS_HM_TESTING_H */
