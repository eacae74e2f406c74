/* An orchestration that submits nothing, with a config function: a real
 * shared object for the callable packing tests. */
#include "simpler/orchestration.h"

SP_ORCHESTRATION(orch_noop)
{
    (void)o;
    (void)args;
}

SP_ORCH_CONFIG(orch_noop_config)
{
    cfg->abi_version = SP_ORCH_ABI_VERSION;
    cfg->tensor_count = 0;
    cfg->scalar_count = 0;
}
