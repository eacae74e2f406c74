/* tp_ffn at level 3 / 4: a tensor-parallel MLP, y = relu(x W1) W2, over
 * the P chips of the sp_l3. W1 is split by columns and W2 by rows, so
 * chip c computes a partial y_c = relu(x W1[:, c]) W2[c, :] into its
 * communication window, and an allreduce (SUM, f32) over the P chips
 * leaves y = sum_c y_c on every chip. Checked against the plain-C golden
 * and against the single-chip run (the same callable on chip 0 with the
 * unsplit weights). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mc.h"
#include "simpler/status.h"
#include "tp_ffn/golden.h"

enum { TP_T = 16, TP_H = 64, TP_F = 240 }; /* F divides by 1..6, 8, 10, 12, 15, 16 */

typedef struct tp_state {
    int chips;
    int64_t fp; /* F / chips */
    float *x, *w1, *w2, *golden;
    sp_l3_tensor x_c[SP_L3_MAX_CHIPS], w1_c[SP_L3_MAX_CHIPS], w2_c[SP_L3_MAX_CHIPS];
    sp_l3_tensor y_c[SP_L3_MAX_CHIPS]; /* member c's window as [T,H] */
    sp_l3_domain *dom;
    sp_l3_tensor w1_full, w2_full, y_ref; /* chip 0, the single-chip run */
    int ref_ran;
} tp_state;

static void tp_teardown(sp_l3 *l3, void *state)
{
    tp_state *s = state;
    (void)l3; /* tensors die with the sp_l3 or at sp_l3_tensor_free; the domain here */
    if (!s)
        return;
    sp_l3_domain_destroy(s->dom);
    free(s->x);
    free(s->w1);
    free(s->w2);
    free(s->golden);
    free(s);
}

static int tp_setup(sp_l3 *l3, void **out, char *err, size_t err_len)
{
    const int P = (int)sp_l3_chip_count(l3);
    if (P < 1 || TP_F % P) {
        snprintf(err, err_len, "tp_ffn: %d chips do not divide F=%d", P, TP_F);
        return SP_EINVAL;
    }
    tp_state *s = calloc(1, sizeof *s);
    if (!s)
        return SP_ENOMEM;
    s->chips = P;
    s->fp = TP_F / P;
    const int64_t T = TP_T, H = TP_H, F = TP_F, Fp = s->fp;
    s->x = malloc((size_t)(T * H) * sizeof(float));
    s->w1 = malloc((size_t)(H * F) * sizeof(float));
    s->w2 = malloc((size_t)(F * H) * sizeof(float));
    s->golden = malloc((size_t)(T * H) * sizeof(float));
    float *shard = malloc((size_t)(H * F) * sizeof(float));
    int rc = SP_ENOMEM;
    if (!s->x || !s->w1 || !s->w2 || !s->golden || !shard)
        goto fail;
    mc_fill(s->x, (size_t)(T * H), 11, -1.0f, 1.0f);
    mc_fill(s->w1, (size_t)(H * F), 12, -0.25f, 0.25f);
    mc_fill(s->w2, (size_t)(F * H), 13, -0.25f, 0.25f);
    if (tp_ffn_golden(s->x, s->w1, s->w2, T, H, F, s->golden))
        goto fail;

    const int64_t x_shape[2] = {T, H}, w1_shape[2] = {H, Fp}, w2_shape[2] = {Fp, H};
    for (int c = 0; c < P; c++) {
        for (int64_t k = 0; k < H; k++) /* W1[:, c*Fp .. +Fp) */
            memcpy(shard + k * Fp, s->w1 + k * F + c * Fp, (size_t)Fp * sizeof(float));
        if ((rc =
                 mc_chip_tensor(l3, c, SP_DTYPE_F32, 2, x_shape, s->x, &s->x_c[c], err, err_len)) ||
            (rc = mc_chip_tensor(l3, c, SP_DTYPE_F32, 2, w1_shape, shard, &s->w1_c[c], err,
                                 err_len)) ||
            (rc = mc_chip_tensor(l3, c, SP_DTYPE_F32, 2, w2_shape, s->w2 + c * Fp * H, &s->w2_c[c],
                                 err, err_len)))
            goto fail;
    }
    const int64_t w1f_shape[2] = {H, F}, w2f_shape[2] = {F, H};
    if ((rc =
             mc_chip_tensor(l3, 0, SP_DTYPE_F32, 2, w1f_shape, s->w1, &s->w1_full, err, err_len)) ||
        (rc =
             mc_chip_tensor(l3, 0, SP_DTYPE_F32, 2, w2f_shape, s->w2, &s->w2_full, err, err_len)) ||
        (rc = mc_chip_tensor(l3, 0, SP_DTYPE_F32, 2, x_shape, NULL, &s->y_ref, err, err_len)))
        goto fail;

    int chips[SP_L3_MAX_CHIPS];
    for (int c = 0; c < P; c++)
        chips[c] = c;
    rc = sp_l3_domain_create(l3, chips, (uint32_t)P, (uint64_t)(T * H) * sizeof(float), &s->dom);
    for (int c = 0; rc == SP_OK && c < P; c++) {
        rc = sp_l3_domain_view(s->dom, (uint32_t)c, 0, SP_DTYPE_F32, T * H, &s->y_c[c]);
        if (rc == SP_OK)
            rc = mc_reshape(&s->y_c[c], 2, x_shape);
    }
    if (rc != SP_OK) {
        snprintf(err, err_len, "tp_ffn: domain of %d chips: %s", P, sp_l3_last_error(l3));
        goto fail;
    }
    free(shard);
    *out = s;
    return SP_OK;
fail:
    free(shard);
    tp_teardown(l3, s);
    return rc;
}

static int64_t tp_submit_chip(sp_l3_run *r, tp_state *s, int c)
{
    const sp_l3_arg a[4] = {mc_arg(&s->x_c[c], SP_IN), mc_arg(&s->w1_c[c], SP_IN),
                            mc_arg(&s->w2_c[c], SP_IN), mc_arg(&s->y_c[c], SP_OUT_EXISTING)};
    return sp_l3_submit(r, c, MC_TP_FFN, a, 4, NULL, 0, NULL);
}

int tp_ffn_compute_l3(sp_l3_run *r, void *user)
{
    tp_state *s = user;
    for (int c = 0; c < s->chips; c++)
        tp_submit_chip(r, s, c);
    return sp_l3_run_error(r);
}

int tp_ffn_allreduce_l3(sp_l3_run *r, void *user)
{
    tp_state *s = user;
    sp_l3_allreduce(r, s->dom, 0, (uint64_t)TP_T * TP_H, SP_DTYPE_F32, SP_L3_SUM);
    return sp_l3_run_error(r);
}

/* The example: every chip's partial product, then the sum over chips. The
 * allreduce depends on each chip task through the window bytes it writes. */
int tp_ffn_l3(sp_l3_run *r, void *user)
{
    tp_state *s = user;
    for (int c = 0; c < s->chips; c++)
        tp_submit_chip(r, s, c);
    sp_l3_allreduce(r, s->dom, 0, (uint64_t)TP_T * TP_H, SP_DTYPE_F32, SP_L3_SUM);
    return sp_l3_run_error(r);
}

int tp_ffn_single_l3(sp_l3_run *r, void *user)
{
    tp_state *s = user;
    const sp_l3_arg a[4] = {mc_arg(&s->x_c[0], SP_IN), mc_arg(&s->w1_full, SP_IN),
                            mc_arg(&s->w2_full, SP_IN), mc_arg(&s->y_ref, SP_OUT_EXISTING)};
    sp_l3_submit(r, 0, MC_TP_FFN, a, 4, NULL, 0, NULL);
    s->ref_ran = 1;
    return sp_l3_run_error(r);
}

static int tp_compare(const char *what, const float *got, const float *want, double *max_err,
                      char *err, size_t err_len)
{
    size_t at;
    const double e = mc_max_rel_err(got, want, (size_t)TP_T * TP_H, &at);
    if (e > *max_err)
        *max_err = e;
    if (e <= MC_TOL)
        return SP_OK;
    snprintf(err, err_len, "tp_ffn: %s: y[%zu,%zu] = %g, want %g (rel err %.3g > %.0e)", what,
             at / TP_H, at % TP_H, (double)got[at], (double)want[at], e, MC_TOL);
    return SP_EINVAL;
}

static int tp_check(sp_l3 *l3, void *state, double *max_err, char *err, size_t err_len)
{
    tp_state *s = state;
    const uint64_t bytes = (uint64_t)TP_T * TP_H * sizeof(float);
    float *got = malloc(bytes), *ref = malloc(bytes);
    int rc = got && ref ? SP_OK : SP_ENOMEM;
    *max_err = 0.0;
    if (rc == SP_OK && s->ref_ran && sp_l3_chip_is_local(l3, 0)) {
        rc = sp_l3_read(l3, &s->y_ref, ref, bytes);
        if (rc == SP_OK)
            rc = tp_compare("single-chip run vs golden", ref, s->golden, max_err, err, err_len);
    }
    for (int c = 0; rc == SP_OK && c < s->chips; c++) {
        if (!sp_l3_chip_is_local(l3, c))
            continue;
        char what[96];
        if ((rc = sp_l3_read(l3, &s->y_c[c], got, bytes)) != SP_OK)
            break;
        snprintf(what, sizeof what, "chip %d of %d vs golden", c, s->chips);
        rc = tp_compare(what, got, s->golden, max_err, err, err_len);
        if (rc == SP_OK && c == 0 && s->ref_ran) {
            snprintf(what, sizeof what, "chip 0 of %d vs the single-chip run", s->chips);
            rc = tp_compare(what, got, ref, max_err, err, err_len);
        }
    }
    if (rc != SP_OK && !err[0])
        snprintf(err, err_len, "tp_ffn: read back: %s", sp_l3_last_error(l3));
    free(got);
    free(ref);
    return rc;
}

const mc_example mc_tp_ffn = {
    .name = "tp_ffn",
    .setup = tp_setup,
    .orch = tp_ffn_l3,
    .reference = tp_ffn_single_l3,
    .check = tp_check,
    .teardown = tp_teardown,
};
