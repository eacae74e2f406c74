/* What the L3 tests share: an sp_l3 over N sim chips with the test
 * callable (tests/kernels/l3_kernels.c, plus fault_kernels.c's segv as
 * func_id 4, fault_hang as 5) registered as callable 0, and small run helpers. */
#ifndef SP_L3_TEST_SUPPORT_H
#define SP_L3_TEST_SUPPORT_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "simpler/callable.h"
#include "simpler/l3.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

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

/* An sp_l3 of `chips` chips from device `first` on, callable 0 registered. */
static inline sp_l3 *l3t_open(uint32_t chips, const char *runtime, uint32_t flags, int first)
{
    char err[1024] = "";
    sp_l3_options o = {.chips = chips, .runtime = runtime, .flags = flags, .first_device = first};
    o.worker.module_dir = SP_MODULE_DIR;
    sp_l3 *l3 = NULL;
    int rc = sp_l3_open(&o, &l3, err, sizeof err);
    cr_assert_eq(rc, SP_OK, "sp_l3_open: %s", err);
    cr_assert_eq(l3t_register(l3, err, sizeof err), SP_OK, "%s", err);
    return l3;
}

/* The config of every test chip task: the checking mode off (device
 * tensors have no red zones; make test's sanitizer phases set SIMPLER_CHECK). */
static const sp_call_config l3t_cfg = {.flags = SP_CALL_NO_CHECK};

static inline sp_l3_arg l3t_arg(const sp_l3_tensor *t, int dir)
{
    return (sp_l3_arg){.tensor = *t, .dir = (uint8_t)dir};
}

/* dst = dst * a + src on `chip`. */
static inline int64_t l3t_axpy(sp_l3_run *r, int chip, const sp_l3_tensor *src,
                               const sp_l3_tensor *dst, uint64_t a)
{
    sp_l3_arg args[2] = {l3t_arg(src, SP_IN), l3t_arg(dst, SP_INOUT)};
    uint64_t sc[2] = {K_AXPY, a};
    return sp_l3_submit(r, chip, 0, args, 2, sc, 2, &l3t_cfg);
}

/* dst[i] = v + i on `chip`. */
static inline int64_t l3t_fill(sp_l3_run *r, int chip, const sp_l3_tensor *dst, uint64_t v)
{
    sp_l3_arg args[1] = {l3t_arg(dst, SP_OUT)};
    uint64_t sc[2] = {K_FILL, v};
    return sp_l3_submit(r, chip, 0, args, 1, sc, 2, &l3t_cfg);
}

static inline sp_l3_tensor l3t_vec(sp_l3 *l3, int chip, int64_t n)
{
    sp_l3_tensor t;
    int rc = sp_l3_tensor_alloc(l3, chip, SP_DTYPE_U64, 1, &n, &t);
    cr_assert_eq(rc, SP_OK, "alloc on chip %d: %s", chip, sp_l3_last_error(l3));
    return t;
}

#endif
