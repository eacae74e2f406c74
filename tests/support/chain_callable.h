/* The chained-dispatch tests' callable: tests/kernels/chain_orch.c with the
 * kernels of tests/kernels/chain_kernels.c. Header-only: the tests that
 * include it define SP_TEST_KERNEL_DIR. */
#ifndef SP_TEST_CHAIN_CALLABLE_H
#define SP_TEST_CHAIN_CALLABLE_H

#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/worker.h"

#include "register_spec.h"

/* Pack the callable and register it on `w` as callable `id`. 0 or a
 * status, reason in err. */
static inline int chain_register(sp_worker *w, uint32_t id, char *err, size_t err_len)
{
    const char *so = SP_TEST_KERNEL_DIR "/chain_kernels.so";
    sp_callable_kernel_spec k[] = {
        {.func_id = 0, .core_type = SP_CORE_AIV, .path = so, .entry = "chain_step0"},
        {.func_id = 1, .core_type = SP_CORE_AIV, .path = so, .entry = "chain_step1"},
        {.func_id = 2, .core_type = SP_CORE_AIV, .path = so, .entry = "chain_step2"},
        {.func_id = 3, .core_type = SP_CORE_AIC, .path = so, .entry = "chain_step0"},
        {.func_id = 4, .core_type = SP_CORE_AIC, .path = so, .entry = "chain_step1"},
        {.func_id = 5, .core_type = SP_CORE_AIC, .path = so, .entry = "chain_step2"},
    };
    sp_callable_spec spec = {.orch_path = SP_TEST_KERNEL_DIR "/chain_orch.so",
                             .orch_entry = "chain_orch",
                             .orch_config = "chain_orch_config",
                             .kernels = k,
                             .kernel_count = sizeof k / sizeof k[0]};
    return sp_test_register_spec(w, id, &spec, err, err_len);
}

#endif
