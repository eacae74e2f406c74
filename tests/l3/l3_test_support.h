/* What the L3 tests share: an sp_l3 over N sim chips with the test
 * callable (l3_test_callable.h) registered as callable 0, and small run
 * helpers. */
#ifndef SP_L3_TEST_SUPPORT_H
#define SP_L3_TEST_SUPPORT_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "l3_test_callable.h"
#include "simpler/l3.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

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
