/* paged_attention orchestration: decode attention over a paged KV cache,
 * flash-attention style. One KV head is shared by all H query heads (MQA).
 *
 * The orchestration reads two control tensors: context_lens (how many KV
 * blocks batch b has) and block_table (which physical block holds its j-th
 * logical block). Per (batch, block) it submits
 *     QK (AIC) -> softmax (AIV) -> PV (AIC) -> update (AIV)
 * and per batch one normalize (AIV) after the last block. Order comes from
 * derived dependencies only: block-local tensors (S, P, m, l, O) are fresh
 * outputs (creator edges), and the running state (M, L, Acc) is created by
 * the first update and read-modified-written by the next (RAW/WAW chain).
 *
 * Args: tensors query f32 [B,H,D] (IN), key_cache f32 [NB,bs,D] (IN),
 * value_cache f32 [NB,bs,D] (IN), block_table i32 [B,MB] (IN),
 * context_lens i32 [B] (IN), out f32 [B,H,D] (OUT); scalar 0 = scale (f32
 * bits). Tasks: 4 per (batch, block) + 1 per batch. */
#include "simpler/orchestration.h"
#include "paged_attention_kernels.h"

/* func_ids: examples/CMakeLists.txt names each kernel once and
 * simpler_add_callable generates paged_attention_kernels.h with SP_FUNC_<kernel>. */
enum {
    PA_QK = SP_FUNC_pa_qk,
    PA_SOFTMAX = SP_FUNC_pa_softmax,
    PA_PV = SP_FUNC_pa_pv,
    PA_UPDATE = SP_FUNC_pa_update,
    PA_NORMALIZE = SP_FUNC_pa_normalize
};

SP_ORCH_CONFIG(paged_attention_config)
{
    cfg->tensor_count = 6;
    cfg->scalar_count = 1;
}

/* The running softmax state of one batch: created by its first update. */
typedef struct pa_state {
    sp_tensor M, L, acc;
} pa_state;

/* Submit QK, softmax, PV and update for one block of `n` valid keys. */
static int submit_block(sp_orch *o, sp_tensor *q_b, sp_tensor *k_blk, sp_tensor *v_blk,
                        uint64_t scale_bits, int64_t n, int first, pa_state *st)
{
    const int64_t H = q_b->shape[1], D = q_b->shape[2], bs = k_blk->shape[1];
    const int64_t s_shape[2] = {H, bs}, h_shape[1] = {H}, o_shape[2] = {H, D};
    sp_tensor S = sp_tensor_spec(SP_DTYPE_F32, 2, s_shape);
    sp_tensor P = S;
    sp_tensor m = sp_tensor_spec(SP_DTYPE_F32, 1, h_shape), l = m;
    sp_tensor O = sp_tensor_spec(SP_DTYPE_F32, 2, o_shape);

    sp_task t = sp_task_aic(PA_QK);
    sp_task_in(&t, q_b);
    sp_task_in(&t, k_blk);
    sp_task_out(&t, &S);
    sp_task_scalar(&t, scale_bits);
    sp_task_scalar(&t, (uint64_t)n);
    if (sp_submit(o, &t) < 0)
        return -1;

    t = sp_task_aiv(PA_SOFTMAX);
    sp_task_in(&t, &S);
    sp_task_out(&t, &P);
    sp_task_out(&t, &m);
    sp_task_out(&t, &l);
    sp_task_scalar(&t, (uint64_t)n);
    if (sp_submit(o, &t) < 0)
        return -1;

    t = sp_task_aic(PA_PV);
    sp_task_in(&t, &P);
    sp_task_in(&t, v_blk);
    sp_task_out(&t, &O);
    sp_task_scalar(&t, (uint64_t)n);
    if (sp_submit(o, &t) < 0)
        return -1;

    /* The running state is rewritten into fresh outputs each block: every
     * state tensor lives from one update to the next, so the runtime can
     * reclaim it early (tensormap_and_ringbuffer's bounded rings). */
    pa_state prev = first ? (pa_state){m, l, O} : *st;
    pa_state next = {sp_tensor_spec(SP_DTYPE_F32, 1, h_shape),
                     sp_tensor_spec(SP_DTYPE_F32, 1, h_shape),
                     sp_tensor_spec(SP_DTYPE_F32, 2, o_shape)};
    t = sp_task_aiv(PA_UPDATE);
    sp_task_in(&t, &m);
    sp_task_in(&t, &l);
    sp_task_in(&t, &O);
    sp_task_in(&t, &prev.M);
    sp_task_in(&t, &prev.L);
    sp_task_in(&t, &prev.acc);
    sp_task_out(&t, &next.M);
    sp_task_out(&t, &next.L);
    sp_task_out(&t, &next.acc);
    sp_task_scalar(&t, (uint64_t)first);
    if (sp_submit(o, &t) < 0)
        return -1;
    *st = next;
    return 0;
}

SP_ORCHESTRATION(paged_attention_orch)
{
    const sp_tensor *query = &args->tensors[0], *kc = &args->tensors[1];
    const sp_tensor *vc = &args->tensors[2], *table = &args->tensors[3];
    const sp_tensor *lens = &args->tensors[4], *out = &args->tensors[5];
    const uint64_t scale_bits = args->scalars[0];
    if (query->ndim != 3 || kc->ndim != 3 || vc->ndim != 3 || table->ndim != 2 || lens->ndim != 1 ||
        out->ndim != 3 || kc->shape[2] != query->shape[2] || vc->shape[0] != kc->shape[0] ||
        vc->shape[1] != kc->shape[1] || vc->shape[2] != kc->shape[2] ||
        table->shape[0] != query->shape[0] || lens->shape[0] != query->shape[0] ||
        out->shape[0] != query->shape[0] || out->shape[1] != query->shape[1] ||
        out->shape[2] != query->shape[2]) {
        sp_orch_fatal(o, SP_ESHAPE,
                      "paged_attention: want query/out [B,H,D], caches [NB,bs,D], "
                      "block_table [B,MB], context_lens [B]");
        return;
    }
    const int64_t B = query->shape[0], NB = kc->shape[0], bs = kc->shape[1];
    const int64_t MB = table->shape[1];

    for (int64_t b = 0; b < B; b++) {
        const int64_t ctx = sp_tensor_read_int(o, lens, b);
        if (sp_orch_error(o))
            return;
        if (ctx < 1 || ctx > MB * bs) {
            sp_orch_fatal(o, SP_EINVAL, "paged_attention: context_lens[%lld]=%lld, want 1..%lld",
                          (long long)b, (long long)ctx, (long long)(MB * bs));
            return;
        }
        sp_tensor q_b, out_b;
        sp_tensor_slice(query, 0, b, 1, &q_b);
        sp_tensor_slice(out, 0, b, 1, &out_b);
        pa_state st;
        memset(&st, 0, sizeof st);
        const int64_t blocks = (ctx + bs - 1) / bs;
        for (int64_t j = 0; j < blocks; j++) {
            const int64_t phys = sp_tensor_read_int(o, table, b * MB + j);
            if (sp_orch_error(o))
                return;
            if (phys < 0 || phys >= NB) {
                sp_orch_fatal(o, SP_EINVAL,
                              "paged_attention: block_table[%lld][%lld]=%lld, want 0..%lld",
                              (long long)b, (long long)j, (long long)phys, (long long)(NB - 1));
                return;
            }
            sp_tensor k_blk, v_blk;
            sp_tensor_slice(kc, 0, phys, 1, &k_blk);
            sp_tensor_slice(vc, 0, phys, 1, &v_blk);
            const int64_t n = ctx - j * bs < bs ? ctx - j * bs : bs;
            if (submit_block(o, &q_b, &k_blk, &v_blk, scale_bits, n, j == 0, &st) != 0)
                return;
        }
        sp_task t = sp_task_aiv(PA_NORMALIZE);
        sp_task_in(&t, &st.L);
        sp_task_in(&t, &st.acc);
        sp_task_arg(&t, &out_b, SP_OUT_EXISTING);
        if (sp_submit(o, &t) < 0)
            return;
    }
}
