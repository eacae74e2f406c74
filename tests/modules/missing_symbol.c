/* A runtime module with a valid contract that lacks one mandatory symbol,
 * simpler_wait_run. The worker must refuse it at load (SP_EMODULE_SYMBOL),
 * naming the symbol. */
#define simpler_wait_run dropped_simpler_wait_run
#include "module_stubs.h"

static const sp_pipeline_contract contract = SP_TEST_GOOD_CONTRACT;

SP_EXPORT const sp_pipeline_contract *simpler_get_pipeline_contract(void)
{
    return &contract;
}
