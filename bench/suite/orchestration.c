/* simpler's side of the suite: the orchestration submits the suite's DAG
 * (dag.h, the same generator the peers use) as AIV tasks and lets the
 * runtime derive every dependence from the tensor views' directions.
 *
 * Args: tensor 0 = the tiles: synthetic graphs [tiles, 16] f32, one row per
 * tile; cholesky_real the [n, n] f64 matrix, tile (i,j) a ts x ts 2-D view.
 * Scalars: 0 dag kind, 1 DAG size (count or tiles per side), 2 spin ns,
 * 3 real (0 | 1), 4 tile order ts. The spin is data (declared so in the
 * config, passed with sp_task_scalar_arg): a replay of the recorded graph
 * takes the new run's value, so the suite's timed run can replay the
 * warm-up's graph (bench_suite_simpler --replay).
 * func_ids (bench/suite/CMakeLists.txt): 1..3 the synthetic kernel taking
 * 1..3 tiles (the spin scalar follows the tensors); 4..7 potrf, trsm, syrk,
 * gemm. */
#include "simpler/orchestration.h"

#include "dag.h"

enum { FID_SYNTHETIC = 0, FID_POTRF = 4 };

SP_ORCH_CONFIG(suite_config)
{
    cfg->tensor_count = 1;
    cfg->scalar_count = 5;
    cfg->replay = SP_ORCH_REPLAY_DECLARED;
    cfg->shaping_scalars[0] = (1u << 0) | (1u << 1) | (1u << 3) | (1u << 4); /* not the spin */
}

static const sp_dir dir_of[4] = {SP_DIR_INVALID, SP_IN, SP_OUT_EXISTING, SP_INOUT};

SP_ORCHESTRATION(suite_orch)
{
    const sp_tensor whole = args->tensors[0];
    const int kind = (int)args->scalars[0], real = args->scalars[3] != 0;
    const uint32_t n = (uint32_t)args->scalars[1];
    const int64_t ts = (int64_t)args->scalars[4];
    if (kind < 0 || kind > DAG_CHOLESKY || (real && kind != DAG_CHOLESKY)) {
        sp_orch_fatal(o, SP_EINVAL, "suite: bad graph kind %d (real=%d)", kind, real);
        return;
    }
    dag_iter it;
    dag_task d;
    dag_begin(&it, kind, n);
    while (dag_next(&it, &d)) {
        sp_tensor view[3];
        sp_task t = sp_task_aiv(real ? FID_POTRF + d.op - OP_POTRF : FID_SYNTHETIC + d.n_acc);
        for (int a = 0; a < d.n_acc; a++) {
            int rc;
            if (real) { /* rows, then columns: an exact 2-D tile of one matrix */
                sp_tensor rows;
                rc = sp_tensor_slice(&whole, 0, d.ti[a] * ts, ts, &rows);
                if (rc == SP_OK)
                    rc = sp_tensor_slice(&rows, 1, d.tj[a] * ts, ts, &view[a]);
            } else {
                rc = sp_tensor_slice(&whole, 0, d.tile[a], 1, &view[a]);
            }
            if (rc != SP_OK) {
                sp_orch_fatal(o, rc, "suite: cannot view tile %u", d.tile[a]);
                return;
            }
            sp_task_arg(&t, &view[a], dir_of[d.mode[a]]);
        }
        if (!real)
            sp_task_scalar_arg(&t, args, 2); /* the spin */
        if (sp_submit(o, &t) < 0)
            return; /* the runtime recorded why */
    }
}
