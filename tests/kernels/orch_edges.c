/* The orchestration of tests/scene/test_edges_both_runtimes.c: submits
 * program scalars[0] (tests/support/edges_programs.h) for scalars[1]
 * iterations over tensors 0 (A) and 1 (B), u64 EDGES_R x EDGES_C, with the
 * kernels of tests/kernels/edges_kernels.c. */
#include "../support/edges_programs.h"
#include "simpler/orchestration.h"

SP_ORCH_CONFIG(orch_edges_config)
{
    cfg->tensor_count = 2;
    cfg->scalar_count = 2;
}

typedef struct submitter {
    sp_orch *o;
    const sp_tensor *m[2];
} submitter;

static int view(const submitter *s, const edges_box *b, sp_tensor *out)
{
    sp_tensor rows;
    int rc = sp_tensor_slice(s->m[b->buf], 0, b->r, b->h, &rows);
    return rc ? rc : sp_tensor_slice(&rows, 1, b->c, b->w, out);
}

static int submit(void *ctx, const edges_task *e)
{
    const submitter *s = ctx;
    sp_tensor in[2], out;
    sp_task t = sp_task_aiv(e->func);
    for (int k = 0; k < e->n_in; k++) {
        if (view(s, &e->in[k], &in[k]) != SP_OK)
            return SP_ESHAPE;
        sp_task_in(&t, &in[k]);
    }
    if (view(s, &e->out, &out) != SP_OK)
        return SP_ESHAPE;
    sp_task_arg(&t, &out, e->func == EDGES_SET1 ? SP_OUT_EXISTING : SP_INOUT);
    int64_t id = sp_submit(s->o, &t);
    return id < 0 ? (int)id : 0;
}

SP_ORCHESTRATION(orch_edges)
{
    submitter s = {.o = o, .m = {&args->tensors[0], &args->tensors[1]}};
    const edges_geom g = edges_geom_of((int)args->scalars[0]);
    edges_program((int)args->scalars[0], (uint32_t)args->scalars[1], &g, submit, &s);
}
