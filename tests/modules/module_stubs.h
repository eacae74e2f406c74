/* Shared by the deliberately broken runtime modules in tests/modules/:
 * defines every mandatory symbol of the module ABI as a stub returning
 * SP_ENOTSUP, except the contract getter, which each module defines itself.
 * A module drops a symbol by renaming it before including this file
 * (#define simpler_wait_run dropped_simpler_wait_run): the X-macro expands
 * the renamed token, so the module exports every name but that one. The
 * stubs are never called: the worker refuses these modules at load, before
 * anything but the contract getter runs. Include it once, from a module. */
#ifndef SP_TEST_MODULE_STUBS_H
#define SP_TEST_MODULE_STUBS_H

#include "simpler/module.h"
#include "simpler/status.h"

#define SP_TEST_STUB(name)                                                                         \
    SP_EXPORT int name(void)                                                                       \
    {                                                                                              \
        return SP_ENOTSUP;                                                                         \
    }

/* The list's contract getter becomes an unused stub of another name. */
#define simpler_get_pipeline_contract sp_test_contract_stub
SP_MODULE_SYMBOLS(SP_TEST_STUB)
#undef simpler_get_pipeline_contract

/* A contract the worker accepts: what hbg declares. */
#define SP_TEST_GOOD_CONTRACT                                                                      \
    {                                                                                              \
        .abi_version = SP_PIPELINE_ABI_VERSION, .resource_count = 4, .pipeline_depth = 1,          \
        .resources = {                                                                             \
            {.kind = SP_RESOURCE_HEAP, .resource_class = SP_CLASS_EXEC_HANDLE},                    \
            {.kind = SP_RESOURCE_SHARED_MEMORY, .resource_class = SP_CLASS_EXEC_HANDLE},           \
            {.kind = SP_RESOURCE_RUNTIME_IMAGE, .resource_class = SP_CLASS_EXEC_HANDLE},           \
            {.kind = SP_RESOURCE_TASK_ARGS, .resource_class = SP_CLASS_HOST_PER_RUN},              \
        },                                                                                         \
    }

#endif
