/* The pipeline contract both runtimes declare: one arena bank per pipeline
 * slot holding heap, shared memory and image together (exec-handle), the
 * task arguments per run on the host, and two slots, so the next run can be
 * prepared while the current one executes. SIMPLER_PIPELINE_DEPTH=1 makes a
 * module declare depth 1, for exercising a worker's serial fallback. */
#include <stdlib.h>
#include <string.h>

#include "runtime/runtime.h"

#define CONTRACT(depth)                                                                            \
    {                                                                                              \
        .abi_version = SP_PIPELINE_ABI_VERSION, .resource_count = 4, .pipeline_depth = (depth),    \
        .resources = {                                                                             \
            {.kind = SP_RESOURCE_HEAP, .resource_class = SP_CLASS_EXEC_HANDLE},                    \
            {.kind = SP_RESOURCE_SHARED_MEMORY, .resource_class = SP_CLASS_EXEC_HANDLE},           \
            {.kind = SP_RESOURCE_RUNTIME_IMAGE, .resource_class = SP_CLASS_EXEC_HANDLE},           \
            {.kind = SP_RESOURCE_TASK_ARGS, .resource_class = SP_CLASS_HOST_PER_RUN},              \
        },                                                                                         \
    }

static const sp_pipeline_contract contract_depth2 = CONTRACT(2);
static const sp_pipeline_contract contract_depth1 = CONTRACT(1);

const sp_pipeline_contract *sp_runtime_contract(void)
{
    const char *d = getenv("SIMPLER_PIPELINE_DEPTH");
    return d && strcmp(d, "1") == 0 ? &contract_depth1 : &contract_depth2;
}
