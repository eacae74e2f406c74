/* The multi-chip examples' host side (tp_ffn, ep_moe, dp_attention): each
 * example's setup (tensors and domains on the chips of an sp_l3, with
 * deterministic data), its L3 orchestration (the same function at level 3
 * and level 4), its check against a golden computed in plain C, and the
 * helpers they share. The driver (driver.c) and bench/l3_tp_ffn.c run them.
 *
 * Every rank of an L4 job runs the same setup and orchestration with the
 * same data; a check looks only at the chips local to its rank. */
#ifndef SP_EXAMPLES_MC_H
#define SP_EXAMPLES_MC_H

#include <stddef.h>
#include <stdint.h>

#include "simpler/l3.h"

/* Callable ids every driver registers (mc_register_callables). */
enum {
    MC_TP_FFN = 1,
    MC_EP_DISPATCH = 2,
    MC_EP_EXPERT = 3,
    MC_EP_COMBINE = 4,
    MC_DP_ATTENTION = 5,
};

typedef struct mc_example mc_example;

/* What one example does, for the driver: setup makes its state (owned by
 * the example until teardown), orch is <name>_l3, check compares every
 * local output with the golden (0, or SP_EINVAL with the first mismatch in
 * err), reference (optional) a run whose result the check compares too,
 * and report (optional) adds a line of figures after the checks. */
struct mc_example {
    const char *name;
    int (*setup)(sp_l3 *l3, void **state, char *err, size_t err_len);
    sp_l3_orch_fn orch;
    /* Run once after the rounds of orch, before check (NULL: none). */
    sp_l3_orch_fn reference;
    int (*check)(sp_l3 *l3, void *state, double *max_err, char *err, size_t err_len);
    int (*report)(sp_l3 *l3, void *state, char *line, size_t line_len);
    void (*teardown)(sp_l3 *l3, void *state);
};

extern const mc_example mc_tp_ffn;
extern const mc_example mc_ep_moe;
extern const mc_example mc_dp_attention;
const mc_example *mc_find(const char *name);

/* The L3 orchestrations (include/simpler/l3.h), user = the example's state. */
int tp_ffn_l3(sp_l3_run *r, void *user);
int ep_moe_l3(sp_l3_run *r, void *user);
int dp_attention_l3(sp_l3_run *r, void *user);

/* tp_ffn's single-chip reference run (the whole FFN on chip 0, unsplit
 * weights) and where its result is, for bench/l3_tp_ffn.c. */
int tp_ffn_single_l3(sp_l3_run *r, void *user);
/* tp_ffn's parts alone, for the benchmark's communication share: the chip
 * tasks only, or the allreduce only. */
int tp_ffn_compute_l3(sp_l3_run *r, void *user);
int tp_ffn_allreduce_l3(sp_l3_run *r, void *user);

/* ---- shared helpers ------------------------------------------------------------ */

/* Register every multi-chip callable (MC_*) on every local chip, from
 * MC_CALLABLE_DIR: 0 or the status, the callable named in err. */
int mc_register_callables(sp_l3 *l3, char *err, size_t err_len);

/* Deterministic data: `n` floats uniform in [lo, hi) from `seed`. */
void mc_fill(float *p, size_t n, uint64_t seed, float lo, float hi);
uint64_t mc_rand(uint64_t *state);

/* A contiguous tensor on `chip` filled from `host` (the write is skipped
 * on ranks that do not hold the chip). 0 or a status with the chip in err. */
int mc_chip_tensor(sp_l3 *l3, int chip, int dtype, int ndim, const int64_t *shape, const void *host,
                   sp_l3_tensor *out, char *err, size_t err_len);

/* Reshape a contiguous view in place (same element count): row-major
 * strides from its offset. SP_ESHAPE if the counts differ. */
int mc_reshape(sp_l3_tensor *t, int ndim, const int64_t *shape);

/* Largest |a - b| / (1 + |b|) over n floats, and its index. */
double mc_max_rel_err(const float *a, const float *b, size_t n, size_t *where);

/* An sp_l3_arg. */
static inline sp_l3_arg mc_arg(const sp_l3_tensor *t, uint8_t dir)
{
    sp_l3_arg a;
    a.tensor = *t;
    a.dir = dir;
    return a;
}

uint64_t mc_now_ns(void);

#define MC_TOL 1e-4 /* f32 sums in another order than the golden's */

#endif
