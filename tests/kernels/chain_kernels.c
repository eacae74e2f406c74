/* Kernels of the chained-dispatch tests (tests/scene/test_chained.c): one
 * update step of tests/support/chain_graph.h, per number of input cells.
 * args: [0] the output cell (INOUT), [1..nin] input cells, then scalars
 * [nin+1] the task's id in the program, [nin+2] 1 for a MIX task. The
 * block and MIX lane own elements e with e % parts == part. */
#include "simpler/kernel.h"
#include "simpler/tensor.h"

#include "../support/chain_graph.h"

static void step(const uint64_t *args, const sp_kernel_ctx *ctx, uint32_t nin)
{
    uint64_t *out = sp_tensor_data(sp_arg_tensor(args, 0));
    const uint64_t *in[2] = {0, 0};
    for (uint32_t k = 0; k < nin; k++)
        in[k] = sp_tensor_data(sp_arg_tensor(args, 1 + (int)k));
    uint64_t id = args[nin + 1];
    uint32_t lanes = args[nin + 2] ? 3 : 1;
    uint32_t parts = ctx->block_num * lanes, part = ctx->block_idx * lanes + ctx->sub_block;
    for (uint32_t e = part; e < CHAIN_CELL; e += parts) {
        uint64_t v[2];
        for (uint32_t k = 0; k < nin; k++)
            v[k] = in[k][e];
        out[e] = chain_update(out[e], v, nin, id, e);
    }
}

SP_KERNEL(chain_step0)
{
    step(args, ctx, 0);
}

SP_KERNEL(chain_step1)
{
    step(args, ctx, 1);
}

SP_KERNEL(chain_step2)
{
    step(args, ctx, 2);
}
