/* The L3 tests' callable (tests/kernels/l3_kernels.c, plus
 * fault_kernels.c's segv as func_id 4 and fault_hang as 5), built and
 * registered as callable 0 on every chip of an sp_l3: shared by the
 * Criterion tests (l3_test_support.h) and the mpirun tests
 * (tests/l4/l4_run.c), so it includes no test framework. */
#ifndef SP_L3_TEST_CALLABLE_H
#define SP_L3_TEST_CALLABLE_H

#include <stdio.h>
#include <stdlib.h>

#include "simpler/callable.h"
#include "simpler/l3.h"

enum { K_AXPY = 0, K_FILL = 1, K_MEET = 2, K_NOOP = 3, K_SEGV = 4, K_HANG = 5 };

static inline int l3t_register(sp_l3 *l3, char *err, size_t err_len)
{
    const char *k = SP_TEST_KERNEL_DIR "/l3_kernels.so";
    sp_callable_kernel_spec ks[6] = {
        {.func_id = K_AXPY, .core_type = SP_CORE_AIV, .path = k, .entry = "l3_axpy"},
        {.func_id = K_FILL, .core_type = SP_CORE_AIV, .path = k, .entry = "l3_fill"},
        {.func_id = K_MEET, .core_type = SP_CORE_AIV, .path = k, .entry = "l3_meet"},
        {.func_id = K_NOOP, .core_type = SP_CORE_AIV, .path = k, .entry = "l3_noop"},
        {.func_id = K_SEGV,
         .core_type = SP_CORE_AIV,
         .path = SP_TEST_KERNEL_DIR "/fault_kernels.so",
         .entry = "fault_segv"},
        {.func_id = K_HANG,
         .core_type = SP_CORE_AIV,
         .path = SP_TEST_KERNEL_DIR "/fault_kernels.so",
         .entry = "fault_hang"},
    };
    sp_callable_spec spec = {.orch_path = k,
                             .orch_entry = "l3_one",
                             .orch_config = "l3_one_config",
                             .kernels = ks,
                             .kernel_count = 6};
    void *blob;
    size_t size;
    int rc = sp_callable_build(&spec, &blob, &size, err, err_len);
    if (rc)
        return rc;
    rc = sp_l3_register_callable(l3, 0, blob, size);
    if (rc)
        snprintf(err, err_len, "%s", sp_l3_last_error(l3));
    free(blob);
    return rc;
}

#endif
