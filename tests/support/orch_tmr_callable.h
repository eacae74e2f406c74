/* The ring-test callable, shared by the tests that run it: the orchestration
 * tests/kernels/orch_tmr.c with the kernels of tests/kernels/tmr_kernels.c
 * (func_id 0 tmr_mark, 1 tmr_slow_mark), packed from the built shared
 * objects. Header-only: the tests that include it define SP_TEST_KERNEL_DIR. */
#ifndef SP_TEST_ORCH_TMR_CALLABLE_H
#define SP_TEST_ORCH_TMR_CALLABLE_H

#include <stdio.h>
#include <stdlib.h>

#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/status.h"
#include "simpler/worker.h"

/* Pack the callable into a new blob (free() it). 0 or a status, reason in err. */
static inline int orch_tmr_blob(void **blob, size_t *size, char *err, size_t err_len)
{
    const char *kernels = SP_TEST_KERNEL_DIR "/tmr_kernels.so";
    sp_callable_kernel_spec k[2] = {
        {.func_id = 0, .core_type = SP_CORE_AIV, .path = kernels, .entry = "tmr_mark"},
        {.func_id = 1, .core_type = SP_CORE_AIV, .path = kernels, .entry = "tmr_slow_mark"},
    };
    sp_callable_spec spec = {.orch_path = SP_TEST_KERNEL_DIR "/orch_tmr.so",
                             .orch_entry = "orch_tmr",
                             .orch_config = "orch_tmr_config",
                             .kernels = k,
                             .kernel_count = 2};
    return sp_callable_build(&spec, blob, size, err, err_len);
}

/* Pack it and register it on `w` as callable `id`. 0 or a status, reason in err. */
static inline int orch_tmr_register(sp_worker *w, uint32_t id, char *err, size_t err_len)
{
    void *blob;
    size_t size;
    int rc = orch_tmr_blob(&blob, &size, err, err_len);
    if (rc)
        return rc;
    rc = sp_worker_register_callable(w, id, blob, size);
    if (rc)
        snprintf(err, err_len, "%s", sp_worker_last_error(w));
    free(blob);
    return rc;
}

#endif
