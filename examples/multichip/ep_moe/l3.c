/* ep_moe at level 3 / 4: an expert-parallel MoE layer over the P chips.
 * Each chip holds T tokens and Ep = 2 of the E = 2P experts. A run:
 *   1. dispatch on every chip: route its tokens top-2 and write each kept
 *      (token, expert) row into the expert's slot of the send region
 *      (capacity C per expert, padded with zeros);
 *   2. alltoall: block j of every chip's send region (chip j's experts)
 *      lands as block i of chip j's receive region;
 *   3. expert on every chip: the FFN of each local expert over all rows
 *      it received, into the out region, in the received layout;
 *   4. the reverse alltoall: the outputs go back to their source chips,
 *      slot for slot;
 *   5. combine on every chip: out[t] = sum of gate * expert output.
 * The four regions are byte ranges of one domain window per chip; the
 * dependencies between the chip tasks and the two alltoalls come from
 * those ranges. Checked against the plain-C MoE (ep_moe/golden.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ep_moe/golden.h"
#include "mc.h"
#include "simpler/status.h"

enum { EP_T = 16, EP_H = 32, EP_F = 64, EP_PER_CHIP = 2, EP_TOP_K = 2, EP_CAP = 8 };
enum { R_SEND, R_RECV, R_YOUT, R_RET, R_N }; /* window regions, in order */

typedef struct ep_state {
    int chips;
    int64_t E, region; /* experts; elements per window region (E * C * H) */
    float *x, *wr, *w1, *w2, *golden;
    sp_l3_domain *dom;
    struct {
        sp_l3_tensor x, wr, w1, w2, tok, gate, out;
        sp_l3_tensor send, recv, yout, ret; /* window views */
    } c[SP_L3_MAX_CHIPS];
} ep_state;

static void ep_teardown(sp_l3 *l3, void *state)
{
    ep_state *s = state;
    (void)l3;
    if (!s)
        return;
    sp_l3_domain_destroy(s->dom);
    free(s->x), free(s->wr), free(s->w1), free(s->w2), free(s->golden);
    free(s);
}

static int ep_region(ep_state *s, int c, int region, int ndim, const int64_t *shape,
                     sp_l3_tensor *out)
{
    int rc = sp_l3_domain_view(s->dom, (uint32_t)c, (uint64_t)(region * s->region) * sizeof(float),
                               SP_DTYPE_F32, s->region, out);
    return rc == SP_OK ? mc_reshape(out, ndim, shape) : rc;
}

static int ep_setup(sp_l3 *l3, void **out, char *err, size_t err_len)
{
    const int P = (int)sp_l3_chip_count(l3);
    ep_state *s = calloc(1, sizeof *s);
    if (!s)
        return SP_ENOMEM;
    s->chips = P;
    s->E = (int64_t)P * EP_PER_CHIP;
    const int64_t T = EP_T, H = EP_H, F = EP_F, E = s->E, C = EP_CAP, Ep = EP_PER_CHIP;
    s->region = E * C * H;
    s->x = malloc((size_t)(P * T * H) * sizeof(float));
    s->wr = malloc((size_t)(H * E) * sizeof(float));
    s->w1 = malloc((size_t)(E * H * F) * sizeof(float));
    s->w2 = malloc((size_t)(E * F * H) * sizeof(float));
    s->golden = malloc((size_t)(P * T * H) * sizeof(float));
    int rc = SP_ENOMEM;
    if (!s->x || !s->wr || !s->w1 || !s->w2 || !s->golden)
        goto fail;
    mc_fill(s->x, (size_t)(P * T * H), 21, -1.0f, 1.0f);
    mc_fill(s->wr, (size_t)(H * E), 22, -0.5f, 0.5f);
    mc_fill(s->w1, (size_t)(E * H * F), 23, -0.3f, 0.3f);
    mc_fill(s->w2, (size_t)(E * F * H), 24, -0.3f, 0.3f);
    const ep_moe_dims d = {P, T, H, F, E, EP_TOP_K, C};
    if (ep_moe_golden(&d, s->x, s->wr, s->w1, s->w2, s->golden)) {
        snprintf(err, err_len, "ep_moe: golden cannot take E=%lld", (long long)E);
        rc = SP_EINVAL;
        goto fail;
    }

    int chips[SP_L3_MAX_CHIPS];
    for (int c = 0; c < P; c++)
        chips[c] = c;
    rc = sp_l3_domain_create(l3, chips, (uint32_t)P, (uint64_t)(R_N * s->region) * sizeof(float),
                             &s->dom);
    if (rc != SP_OK) {
        snprintf(err, err_len, "ep_moe: domain of %d chips: %s", P, sp_l3_last_error(l3));
        goto fail;
    }
    const int64_t x_shape[2] = {T, H}, wr_shape[2] = {H, E}, w1_shape[3] = {Ep, H, F},
                  w2_shape[3] = {Ep, F, H}, slot_shape[1] = {E * C}, flat[2] = {E * C, H},
                  blocks[4] = {P, Ep, C, H};
    for (int c = 0; c < P; c++) {
        if ((rc = mc_chip_tensor(l3, c, SP_DTYPE_F32, 2, x_shape, s->x + c * T * H, &s->c[c].x, err,
                                 err_len)) ||
            (rc = mc_chip_tensor(l3, c, SP_DTYPE_F32, 2, wr_shape, s->wr, &s->c[c].wr, err,
                                 err_len)) ||
            (rc = mc_chip_tensor(l3, c, SP_DTYPE_F32, 3, w1_shape, s->w1 + c * Ep * H * F,
                                 &s->c[c].w1, err, err_len)) ||
            (rc = mc_chip_tensor(l3, c, SP_DTYPE_F32, 3, w2_shape, s->w2 + c * Ep * F * H,
                                 &s->c[c].w2, err, err_len)) ||
            (rc = mc_chip_tensor(l3, c, SP_DTYPE_I32, 1, slot_shape, NULL, &s->c[c].tok, err,
                                 err_len)) ||
            (rc = mc_chip_tensor(l3, c, SP_DTYPE_F32, 1, slot_shape, NULL, &s->c[c].gate, err,
                                 err_len)) ||
            (rc =
                 mc_chip_tensor(l3, c, SP_DTYPE_F32, 2, x_shape, NULL, &s->c[c].out, err, err_len)))
            goto fail;
        if ((rc = ep_region(s, c, R_SEND, 2, flat, &s->c[c].send)) ||
            (rc = ep_region(s, c, R_RECV, 4, blocks, &s->c[c].recv)) ||
            (rc = ep_region(s, c, R_YOUT, 4, blocks, &s->c[c].yout)) ||
            (rc = ep_region(s, c, R_RET, 2, flat, &s->c[c].ret))) {
            snprintf(err, err_len, "ep_moe: window views of chip %d: %s", c, sp_l3_last_error(l3));
            goto fail;
        }
    }
    *out = s;
    return SP_OK;
fail:
    ep_teardown(l3, s);
    return rc;
}

int ep_moe_l3(sp_l3_run *r, void *user)
{
    ep_state *s = user;
    const uint64_t block = (uint64_t)(s->region / s->chips); /* elements per destination */
    const uint64_t region_bytes = (uint64_t)s->region * sizeof(float);
    for (int c = 0; c < s->chips; c++) {
        const sp_l3_arg a[5] = {mc_arg(&s->c[c].x, SP_IN), mc_arg(&s->c[c].wr, SP_IN),
                                mc_arg(&s->c[c].send, SP_OUT_EXISTING),
                                mc_arg(&s->c[c].tok, SP_OUT_EXISTING),
                                mc_arg(&s->c[c].gate, SP_OUT_EXISTING)};
        const uint64_t sc[2] = {EP_TOP_K, EP_CAP};
        sp_l3_submit(r, c, MC_EP_DISPATCH, a, 5, sc, 2, NULL);
    }
    sp_l3_alltoall(r, s->dom, R_SEND * region_bytes, R_RECV * region_bytes, block, SP_DTYPE_F32);
    for (int c = 0; c < s->chips; c++) {
        const sp_l3_arg a[4] = {mc_arg(&s->c[c].recv, SP_IN), mc_arg(&s->c[c].w1, SP_IN),
                                mc_arg(&s->c[c].w2, SP_IN), mc_arg(&s->c[c].yout, SP_OUT_EXISTING)};
        sp_l3_submit(r, c, MC_EP_EXPERT, a, 4, NULL, 0, NULL);
    }
    sp_l3_alltoall(r, s->dom, R_YOUT * region_bytes, R_RET * region_bytes, block, SP_DTYPE_F32);
    for (int c = 0; c < s->chips; c++) {
        const sp_l3_arg a[4] = {mc_arg(&s->c[c].ret, SP_IN), mc_arg(&s->c[c].tok, SP_IN),
                                mc_arg(&s->c[c].gate, SP_IN),
                                mc_arg(&s->c[c].out, SP_OUT_EXISTING)};
        sp_l3_submit(r, c, MC_EP_COMBINE, a, 4, NULL, 0, NULL);
    }
    return sp_l3_run_error(r);
}

static int ep_check(sp_l3 *l3, void *state, double *max_err, char *err, size_t err_len)
{
    ep_state *s = state;
    const uint64_t bytes = (uint64_t)EP_T * EP_H * sizeof(float);
    float *got = malloc(bytes);
    int rc = got ? SP_OK : SP_ENOMEM;
    *max_err = 0.0;
    for (int c = 0; rc == SP_OK && c < s->chips; c++) {
        if (!sp_l3_chip_is_local(l3, c))
            continue;
        if ((rc = sp_l3_read(l3, &s->c[c].out, got, bytes)) != SP_OK) {
            snprintf(err, err_len, "ep_moe: read chip %d: %s", c, sp_l3_last_error(l3));
            break;
        }
        size_t at;
        const float *want = s->golden + (size_t)c * EP_T * EP_H;
        const double e = mc_max_rel_err(got, want, (size_t)EP_T * EP_H, &at);
        if (e > *max_err)
            *max_err = e;
        if (e > MC_TOL) {
            snprintf(err, err_len,
                     "ep_moe: chip %d of %d: out[%zu,%zu] = %g, want %g (rel err %.3g > %.0e)", c,
                     s->chips, at / EP_H, at % EP_H, (double)got[at], (double)want[at], e, MC_TOL);
            rc = SP_EINVAL;
        }
    }
    free(got);
    return rc;
}

const mc_example mc_ep_moe = {
    .name = "ep_moe",
    .setup = ep_setup,
    .orch = ep_moe_l3,
    .check = ep_check,
    .teardown = ep_teardown,
};
