/* dp_attention kernel 0 (AIV): one sequence's decode attention over its
 * paged K/V. For each head h: scores[p] = scale * q[h] . K[p, h] for the
 * context positions p < len, where position p is slot p % BS of page
 * block_table[p / BS]; softmax; out[h] = sum_p w[p] V[p, h].
 *
 * q [1,NH,D] IN, key_cache [NB,BS,NH,D] IN, value_cache [NB,BS,NH,D] IN,
 * block_table i32 [1,MB] IN, context_len i32 [1] IN, out [1,NH,D] (in
 * place); scalar scale (f32). */
#include <math.h>

#include "ex_kernel.h"

#define DPA_MAX_CTX 8192

static int64_t at4(const sp_tensor *t, int64_t a, int64_t b, int64_t c, int64_t d)
{
    return a * t->strides[0] + b * t->strides[1] + c * t->strides[2] + d * t->strides[3];
}

SP_KERNEL(dpa_attn)
{
    (void)ctx;
    const sp_tensor *q = sp_arg_tensor(args, 0), *kc = sp_arg_tensor(args, 1),
                    *vc = sp_arg_tensor(args, 2), *bt = sp_arg_tensor(args, 3),
                    *lt = sp_arg_tensor(args, 4), *o = sp_arg_tensor(args, 5);
    const float scale = ex_arg_f32(args, 6);
    if (q->ndim != 3 || o->ndim != 3 || kc->ndim != 4 || vc->ndim != 4 || bt->ndim != 2 ||
        lt->ndim != 1 || bt->dtype != SP_DTYPE_I32 || lt->dtype != SP_DTYPE_I32)
        return;
    const int64_t NH = q->shape[1], D = q->shape[2], NB = kc->shape[0], BS = kc->shape[1];
    const int64_t MB = bt->shape[1];
    const int32_t *table = (const int32_t *)sp_tensor_data(bt);
    const int64_t len = *(const int32_t *)sp_tensor_data(lt);
    if (kc->shape[2] != NH || kc->shape[3] != D || len < 1 || len > MB * BS || len > DPA_MAX_CTX ||
        o->shape[1] != NH || o->shape[2] != D)
        return;
    const float *qp = (const float *)sp_tensor_data(q), *kp = (const float *)sp_tensor_data(kc),
                *vp = (const float *)sp_tensor_data(vc);
    float *op = (float *)sp_tensor_data(o);
    float w[DPA_MAX_CTX];
    for (int64_t h = 0; h < NH; h++) {
        float best = -INFINITY;
        for (int64_t p = 0; p < len; p++) {
            const int64_t page = table[(p / BS) * bt->strides[1]];
            if (page < 0 || page >= NB)
                return;
            float s = 0.0f;
            for (int64_t d = 0; d < D; d++)
                s += qp[h * q->strides[1] + d * q->strides[2]] * kp[at4(kc, page, p % BS, h, d)];
            w[p] = s * scale;
            if (w[p] > best)
                best = w[p];
        }
        float z = 0.0f;
        for (int64_t p = 0; p < len; p++)
            z += w[p] = expf(w[p] - best);
        for (int64_t d = 0; d < D; d++) {
            float acc = 0.0f;
            for (int64_t p = 0; p < len; p++) {
                const int64_t page = table[(p / BS) * bt->strides[1]];
                acc += w[p] * vp[at4(vc, page, p % BS, h, d)];
            }
            op[h * o->strides[1] + d * o->strides[2]] = acc / z;
        }
    }
}
