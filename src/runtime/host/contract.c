/* The pipeline contract both runtimes declare: one arena bank per pipeline
 * slot holding heap, shared memory and image together (exec-handle), the
 * task arguments per run on the host, and two slots, so the next run can be
 * prepared while the current one executes. Fixed: a context asked for depth
 * 1 (settings.pipeline_depth) uses slot and bank 0 only, and the worker
 * caps its lane the same way. */
#include "runtime/runtime.h"

static const sp_pipeline_contract contract = {
    .abi_version = SP_PIPELINE_ABI_VERSION,
    .resource_count = 4,
    .pipeline_depth = 2,
    .resources =
        {
            {.kind = SP_RESOURCE_HEAP, .resource_class = SP_CLASS_EXEC_HANDLE},
            {.kind = SP_RESOURCE_SHARED_MEMORY, .resource_class = SP_CLASS_EXEC_HANDLE},
            {.kind = SP_RESOURCE_RUNTIME_IMAGE, .resource_class = SP_CLASS_EXEC_HANDLE},
            {.kind = SP_RESOURCE_TASK_ARGS, .resource_class = SP_CLASS_HOST_PER_RUN},
        },
};

const sp_pipeline_contract *rt_contract(void)
{
    return &contract;
}
