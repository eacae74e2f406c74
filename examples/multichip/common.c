/* The multi-chip examples' shared host helpers: callable registration,
 * deterministic data, chip tensors filled from the host, reshaped views,
 * and the error measure the checks use. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "mc.h"
#include "simpler/status.h"

const mc_example *mc_find(const char *name)
{
    static const mc_example *const all[] = {&mc_tp_ffn, &mc_ep_moe, &mc_dp_attention};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    return NULL;
}

int mc_register_callables(sp_l3 *l3, char *err, size_t err_len)
{
    static const struct {
        uint32_t id;
        const char *file;
    } callables[] = {
        {MC_TP_FFN, "mc_tp_ffn.spc"},
        {MC_EP_DISPATCH, "mc_ep_dispatch.spc"},
        {MC_EP_EXPERT, "mc_ep_expert.spc"},
        {MC_EP_COMBINE, "mc_ep_combine.spc"},
        {MC_DP_ATTENTION, "mc_dp_attention.spc"},
    };
    for (size_t i = 0; i < sizeof callables / sizeof callables[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", MC_CALLABLE_DIR, callables[i].file);
        int rc = sp_l3_register_callable_file(l3, callables[i].id, path);
        if (rc != SP_OK) {
            snprintf(err, err_len, "register %s: %s", path, sp_l3_last_error(l3));
            return rc;
        }
    }
    return SP_OK;
}

uint64_t mc_rand(uint64_t *state)
{
    /* splitmix64: the same stream on every rank and platform. */
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void mc_fill(float *p, size_t n, uint64_t seed, float lo, float hi)
{
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++)
        p[i] = lo + (hi - lo) * (float)((mc_rand(&s) >> 40) * (1.0 / 16777216.0));
}

int mc_chip_tensor(sp_l3 *l3, int chip, int dtype, int ndim, const int64_t *shape, const void *host,
                   sp_l3_tensor *out, char *err, size_t err_len)
{
    int rc = sp_l3_tensor_alloc(l3, chip, dtype, ndim, shape, out);
    if (rc == SP_OK && host) {
        uint64_t bytes = sp_dtype_size(dtype);
        for (int d = 0; d < ndim; d++)
            bytes *= (uint64_t)shape[d];
        rc = sp_l3_write(l3, out, host, bytes);
    }
    if (rc != SP_OK)
        snprintf(err, err_len, "tensor on chip %d: %s", chip, sp_l3_last_error(l3));
    return rc;
}

int mc_reshape(sp_l3_tensor *t, int ndim, const int64_t *shape)
{
    int64_t n = 1, have = sp_tensor_numel(&t->view);
    for (int d = 0; d < ndim; d++)
        n *= shape[d];
    if (ndim < 1 || ndim > SP_MAX_DIMS || n != have)
        return SP_ESHAPE;
    int64_t stride = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        t->view.shape[d] = shape[d];
        t->view.strides[d] = stride;
        stride *= shape[d];
    }
    t->view.ndim = (uint8_t)ndim;
    return SP_OK;
}

double mc_max_rel_err(const float *a, const float *b, size_t n, size_t *where)
{
    double worst = 0.0;
    *where = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - (double)b[i]) / (1.0 + fabs((double)b[i]));
        if (!(e <= worst)) { /* NaN counts as worst */
            worst = isnan(e) ? INFINITY : e;
            *where = i;
        }
    }
    return worst;
}

uint64_t mc_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
