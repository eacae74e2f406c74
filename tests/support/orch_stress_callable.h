/* The stress callable, shared by the tests that run it: the orchestration
 * tests/kernels/orch_stress.c with the kernels of
 * tests/kernels/stress_kernels.c, packed from the built shared objects.
 * Header-only: the tests that include it define SP_TEST_KERNEL_DIR. */
#ifndef SP_TEST_ORCH_STRESS_CALLABLE_H
#define SP_TEST_ORCH_STRESS_CALLABLE_H

#include <stdio.h>
#include <stdlib.h>

#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/status.h"
#include "simpler/worker.h"

#include "register_spec.h"

enum {
    STRESS_SPMD = 0,    /* [1] tasks of [2] blocks, AIC and AIV in turn; task i marks y[i*b, +b) */
    STRESS_RANDOM = 1,  /* [1] tasks of a random graph from seed [2] */
    STRESS_HOLDS = 2,   /* one task with [1] + 1 producers whose input's creator must stay */
    STRESS_THREADS = 3, /* [1] marks from the entry's thread and [1] from a second one */
};

/* Pack the callable and register it on `w` as callable `id`. 0 or a
 * status, reason in err. */
static inline int orch_stress_register(sp_worker *w, uint32_t id, char *err, size_t err_len)
{
    const char *so = SP_TEST_KERNEL_DIR "/stress_kernels.so";
    sp_callable_kernel_spec k[] = {
        {.func_id = 0, .core_type = SP_CORE_AIV, .path = so, .entry = "stress_mark"},
        {.func_id = 1, .core_type = SP_CORE_AIC, .path = so, .entry = "stress_mark"},
        {.func_id = 2, .core_type = SP_CORE_AIV, .path = so, .entry = "stress_wait"},
        {.func_id = 3, .core_type = SP_CORE_AIV, .path = so, .entry = "stress_fill2"},
        {.func_id = 4, .core_type = SP_CORE_AIV, .path = so, .entry = "stress_add"},
        {.func_id = 5, .core_type = SP_CORE_AIV, .path = so, .entry = "stress_copy"},
        {.func_id = 6, .core_type = SP_CORE_AIV, .path = so, .entry = "stress_fill"},
    };
    sp_callable_spec spec = {.orch_path = SP_TEST_KERNEL_DIR "/orch_stress.so",
                             .orch_entry = "orch_stress",
                             .orch_config = "orch_stress_config",
                             .kernels = k,
                             .kernel_count = sizeof k / sizeof k[0]};
    return sp_test_register_spec(w, id, &spec, err, err_len);
}

/* Settings a stress test reads from the environment: `name` as a count,
 * or `fallback` when unset or not a positive number. */
static inline long stress_count(const char *name, long fallback)
{
    const char *v = getenv(name);
    char *end;
    long n = v ? strtol(v, &end, 10) : 0;
    return v && *v && *end == 0 && n > 0 ? n : fallback;
}

#endif
