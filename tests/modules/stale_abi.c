/* A runtime module built against an older module ABI: its contract reports
 * the previous SP_PIPELINE_ABI_VERSION. The worker must refuse it at load
 * (SP_EABI), naming both versions. */
#include "module_stubs.h"

static const sp_pipeline_contract contract = SP_TEST_GOOD_CONTRACT;

SP_EXPORT const sp_pipeline_contract *simpler_get_pipeline_contract(void)
{
    static sp_pipeline_contract stale;
    stale = contract;
    stale.abi_version = SP_PIPELINE_ABI_VERSION - 1;
    return &stale;
}
