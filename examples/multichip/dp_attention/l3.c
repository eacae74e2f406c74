/* dp_attention at level 3 / 4: decode attention with the batch split over
 * the P chips (data parallel, no communication). Chip c holds sequences
 * [c*b, (c+1)*b) of the B = 8 of the batch: their queries, their K/V in
 * pages of a chip-local cache scattered through a page table, their
 * context lengths. A run is one chip task per chip; nothing orders them,
 * so the chips run concurrently. The report line compares a run's wall
 * with the sum of the walls of each chip's part run alone. Checked against
 * the plain-C attention over the unpaged K/V (dp_attention/golden.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp_attention/golden.h"
#include "mc.h"
#include "simpler/status.h"

enum { DP_B = 8, DP_NH = 8, DP_D = 64, DP_BS = 16, DP_MB = 32 }; /* up to 512 positions */
#define DP_REPORT_RUNS 5

typedef struct dp_state {
    int chips, only; /* only: run just this chip's part (-1: all) */
    int64_t b, nb;   /* sequences and pages per chip */
    float scale;
    float *golden; /* [B, NH, D] */
    struct {
        sp_l3_tensor q, kc, vc, bt, len, out;
    } c[SP_L3_MAX_CHIPS];
} dp_state;

static void dp_teardown(sp_l3 *l3, void *state)
{
    dp_state *s = state;
    (void)l3;
    if (s)
        free(s->golden);
    free(s);
}

/* One chip's share: its sequences' data, paged, on chip c; their golden. */
static int dp_setup_chip(sp_l3 *l3, dp_state *s, int c, char *err, size_t err_len)
{
    const int64_t b = s->b, nb = s->nb, NH = DP_NH, D = DP_D, BS = DP_BS, MB = DP_MB;
    const size_t row = (size_t)(NH * D), cache = (size_t)(nb * BS) * row;
    float *q = malloc((size_t)b * row * sizeof(float));
    float *kc = calloc(cache, sizeof(float)), *vc = calloc(cache, sizeof(float));
    float *k = malloc((size_t)(MB * BS) * row * sizeof(float));
    float *v = malloc((size_t)(MB * BS) * row * sizeof(float));
    int32_t *bt = malloc((size_t)(b * MB) * sizeof(int32_t)), *lens = malloc((size_t)b * 4);
    int rc = SP_ENOMEM;
    if (!q || !kc || !vc || !k || !v || !bt || !lens)
        goto done;
    uint64_t rs = 6000 + (uint64_t)c; /* pages in a shuffled order */
    for (int64_t i = 0; i < nb; i++)
        bt[i] = (int32_t)i;
    for (int64_t i = nb - 1; i > 0; i--) {
        const int64_t j = (int64_t)(mc_rand(&rs) % (uint64_t)(i + 1));
        const int32_t tmp = bt[i];
        bt[i] = bt[j], bt[j] = tmp;
    }
    for (int64_t i = 0; i < b; i++) {
        const int64_t seq = c * b + i;
        uint64_t ls = 7000 + (uint64_t)seq;
        const int64_t len = BS + (int64_t)(mc_rand(&ls) % (uint64_t)(MB * BS - BS + 1));
        lens[i] = (int32_t)len;
        mc_fill(q + (size_t)i * row, row, 3000 + (uint64_t)seq, -1.0f, 1.0f);
        mc_fill(k, (size_t)len * row, 4000 + (uint64_t)seq, -1.0f, 1.0f);
        mc_fill(v, (size_t)len * row, 5000 + (uint64_t)seq, -1.0f, 1.0f);
        for (int64_t p = 0; p < len; p++) {
            const int64_t page = bt[i * MB + p / BS], at = (page * BS + p % BS) * (int64_t)row;
            memcpy(kc + at, k + p * (int64_t)row, row * sizeof(float));
            memcpy(vc + at, v + p * (int64_t)row, row * sizeof(float));
        }
        dp_attention_golden(q + (size_t)i * row, k, v, len, NH, D, s->scale,
                            s->golden + (size_t)seq * row);
    }
    const int64_t q_shape[3] = {b, NH, D}, c_shape[4] = {nb, BS, NH, D}, bt_shape[2] = {b, MB},
                  len_shape[1] = {b};
    if (!(rc = mc_chip_tensor(l3, c, SP_DTYPE_F32, 3, q_shape, q, &s->c[c].q, err, err_len)) &&
        !(rc = mc_chip_tensor(l3, c, SP_DTYPE_F32, 4, c_shape, kc, &s->c[c].kc, err, err_len)) &&
        !(rc = mc_chip_tensor(l3, c, SP_DTYPE_F32, 4, c_shape, vc, &s->c[c].vc, err, err_len)) &&
        !(rc = mc_chip_tensor(l3, c, SP_DTYPE_I32, 2, bt_shape, bt, &s->c[c].bt, err, err_len)) &&
        !(rc = mc_chip_tensor(l3, c, SP_DTYPE_I32, 1, len_shape, lens, &s->c[c].len, err, err_len)))
        rc = mc_chip_tensor(l3, c, SP_DTYPE_F32, 3, q_shape, NULL, &s->c[c].out, err, err_len);
done:
    free(q), free(kc), free(vc), free(k), free(v), free(bt), free(lens);
    return rc;
}

static int dp_setup(sp_l3 *l3, void **out, char *err, size_t err_len)
{
    const int P = (int)sp_l3_chip_count(l3);
    if (P < 1 || DP_B % P) {
        snprintf(err, err_len, "dp_attention: %d chips do not divide the batch of %d", P, DP_B);
        return SP_EINVAL;
    }
    dp_state *s = calloc(1, sizeof *s);
    if (!s)
        return SP_ENOMEM;
    s->chips = P;
    s->only = -1;
    s->b = DP_B / P;
    s->nb = s->b * DP_MB;
    s->scale = 1.0f / sqrtf((float)DP_D);
    s->golden = malloc((size_t)(DP_B * DP_NH * DP_D) * sizeof(float));
    int rc = s->golden ? SP_OK : SP_ENOMEM;
    for (int c = 0; rc == SP_OK && c < P; c++)
        rc = dp_setup_chip(l3, s, c, err, err_len);
    if (rc != SP_OK) {
        dp_teardown(l3, s);
        return rc;
    }
    *out = s;
    return SP_OK;
}

int dp_attention_l3(sp_l3_run *r, void *user)
{
    dp_state *s = user;
    uint32_t bits;
    memcpy(&bits, &s->scale, sizeof bits);
    const uint64_t scale = bits;
    for (int c = 0; c < s->chips; c++) {
        if (s->only >= 0 && c != s->only)
            continue;
        const sp_l3_arg a[6] = {mc_arg(&s->c[c].q, SP_IN),   mc_arg(&s->c[c].kc, SP_IN),
                                mc_arg(&s->c[c].vc, SP_IN),  mc_arg(&s->c[c].bt, SP_IN),
                                mc_arg(&s->c[c].len, SP_IN), mc_arg(&s->c[c].out, SP_OUT_EXISTING)};
        sp_l3_submit(r, c, MC_DP_ATTENTION, a, 6, &scale, 1, NULL);
    }
    return sp_l3_run_error(r);
}

static int dp_check(sp_l3 *l3, void *state, double *max_err, char *err, size_t err_len)
{
    dp_state *s = state;
    const size_t n = (size_t)(s->b * DP_NH * DP_D);
    float *got = malloc(n * sizeof(float));
    int rc = got ? SP_OK : SP_ENOMEM;
    *max_err = 0.0;
    for (int c = 0; rc == SP_OK && c < s->chips; c++) {
        if (!sp_l3_chip_is_local(l3, c))
            continue;
        if ((rc = sp_l3_read(l3, &s->c[c].out, got, n * sizeof(float))) != SP_OK) {
            snprintf(err, err_len, "dp_attention: read chip %d: %s", c, sp_l3_last_error(l3));
            break;
        }
        size_t at;
        const float *want = s->golden + (size_t)c * n;
        const double e = mc_max_rel_err(got, want, n, &at);
        if (e > *max_err)
            *max_err = e;
        if (e > MC_TOL) {
            const size_t row = DP_NH * DP_D;
            snprintf(err, err_len,
                     "dp_attention: chip %d of %d: sequence %lld out[%zu,%zu] = %g, want %g "
                     "(rel err %.3g > %.0e)",
                     c, s->chips, (long long)(c * s->b + (int64_t)(at / row)), at % row / DP_D,
                     at % DP_D, (double)got[at], (double)want[at], e, MC_TOL);
            rc = SP_EINVAL;
        }
    }
    free(got);
    return rc;
}

static int cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Median wall of DP_REPORT_RUNS runs of chip `only`'s part (-1: all). */
static int dp_median_wall(sp_l3 *l3, dp_state *s, int only, uint64_t *out)
{
    uint64_t w[DP_REPORT_RUNS];
    s->only = only;
    for (int i = 0; i < DP_REPORT_RUNS; i++) {
        sp_l3_stats st;
        int rc = sp_l3_run_orch(l3, dp_attention_l3, s, &st);
        if (rc != SP_OK) {
            s->only = -1;
            return rc;
        }
        w[i] = st.wall_ns;
    }
    s->only = -1;
    qsort(w, DP_REPORT_RUNS, sizeof w[0], cmp_u64);
    *out = w[DP_REPORT_RUNS / 2];
    return SP_OK;
}

/* Concurrency: the wall of a run over every chip against the sum of each
 * chip's part alone (every rank runs the same runs: they are collective). */
static int dp_report(sp_l3 *l3, void *state, char *line, size_t line_len)
{
    dp_state *s = state;
    uint64_t all = 0, sum = 0, one = 0;
    int rc = dp_median_wall(l3, s, -1, &all);
    for (int c = 0; rc == SP_OK && c < s->chips; c++)
        if ((rc = dp_median_wall(l3, s, c, &one)) == SP_OK)
            sum += one;
    if (rc != SP_OK) {
        snprintf(line, line_len, "report run failed: %s", sp_l3_last_error(l3));
        return rc;
    }
    snprintf(line, line_len,
             "all %d chips: %.0f us wall; each chip alone, summed: %.0f us (%.2fx, medians of %d)",
             s->chips, (double)all / 1e3, (double)sum / 1e3, all ? (double)sum / (double)all : 0.0,
             DP_REPORT_RUNS);
    return SP_OK;
}

const mc_example mc_dp_attention = {
    .name = "dp_attention",
    .setup = dp_setup,
    .orch = dp_attention_l3,
    .check = dp_check,
    .report = dp_report,
    .teardown = dp_teardown,
};
