/* The same program gives the same edges on both runtimes: host_build_graph
 * derives them on the host over the whole graph, tensormap_and_ringbuffer
 * on the chip over its window, from the one TensorMap; with a window that
 * holds the whole graph nothing retires, so the traced edge sets must be
 * equal pair for pair. The programs (tests/support/edges_programs.h) are
 * the ones whose edges used to grow with the iteration count: ping-pong
 * stencils read through halo views (rows, and 2-D boxes), wavefront sweeps
 * and repeated Cholesky. Both runtimes' bytes match a sequential host
 * reference, and the edges per task of the last iteration are the same at
 * 4 and at 24 iterations. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "edges_programs.h"
#include "register_spec.h"
#include "simpler/callable.h"
#include "simpler/kernel.h"
#include "simpler/status.h"
#include "simpler/tensor.h"
#include "simpler/trace.h"
#include "simpler/worker.h"
#include "trace_pairs.h"

#define HBG_MODULE SP_MODULE_DIR "/libsimpler_hbg_sim.so"
#define TMR_MODULE SP_MODULE_DIR "/libsimpler_tmr_sim.so"

enum { RT_HBG = 0, RT_TMR = 1 };
static const char *const rt_name[2] = {"hbg", "tmr"};
static const char *const prog_name[EDGES_PROGS] = {"row stencil", "2-D stencil", "wavefront",
                                                   "Cholesky"};

typedef struct outcome {
    uint64_t m[2][EDGES_R * EDGES_C];
    pair *edges;
    uint64_t edge_count, tasks;
} outcome;

static sp_worker *w[2];

static void open_workers(void)
{
    const char *so = SP_TEST_KERNEL_DIR "/edges_kernels.so";
    sp_callable_kernel_spec k[] = {
        {.func_id = EDGES_SET1, .core_type = SP_CORE_AIV, .path = so, .entry = "edges_set1"},
        {.func_id = EDGES_ACC0, .core_type = SP_CORE_AIV, .path = so, .entry = "edges_acc0"},
        {.func_id = EDGES_ACC1, .core_type = SP_CORE_AIV, .path = so, .entry = "edges_acc1"},
        {.func_id = EDGES_ACC2, .core_type = SP_CORE_AIV, .path = so, .entry = "edges_acc2"},
    };
    sp_callable_spec spec = {.orch_path = SP_TEST_KERNEL_DIR "/orch_edges.so",
                             .orch_entry = "orch_edges",
                             .orch_config = "orch_edges_config",
                             .kernels = k,
                             .kernel_count = sizeof k / sizeof k[0]};
    for (int rt = 0; rt < 2; rt++) {
        char err[1024] = "";
        cr_assert_eq(
            sp_worker_open(rt == RT_HBG ? HBG_MODULE : TMR_MODULE, NULL, &w[rt], err, sizeof err),
            SP_OK, "%s", err);
        cr_assert_eq(sp_test_register_spec(w[rt], 0, &spec, err, sizeof err), SP_OK, "%s", err);
    }
}

static void close_workers(void)
{
    for (int rt = 0; rt < 2; rt++)
        if (w[rt])
            sp_worker_close(w[rt]);
}

TestSuite(edges_both_runtimes, .init = open_workers, .fini = close_workers, .timeout = 300);

static void init_matrices(uint64_t m[2][EDGES_R * EDGES_C])
{
    for (int b = 0; b < 2; b++)
        for (int e = 0; e < EDGES_R * EDGES_C; e++)
            m[b][e] = (uint64_t)(b * 7919 + e * 31 + 1);
}

/* ---- the sequential reference: edges_kernels.c's arithmetic, task by task */

static int reference_task(void *ctx, const edges_task *t)
{
    uint64_t(*m)[EDGES_R * EDGES_C] = ctx;
    uint64_t s = 1;
    for (int k = 0; k < t->n_in; k++)
        for (int64_t r = 0; r < t->in[k].h; r++)
            for (int64_t c = 0; c < t->in[k].w; c++)
                s += m[t->in[k].buf][(t->in[k].r + r) * EDGES_C + t->in[k].c + c];
    for (int64_t r = 0; r < t->out.h; r++)
        for (int64_t c = 0; c < t->out.w; c++) {
            uint64_t *d = &m[t->out.buf][(t->out.r + r) * EDGES_C + t->out.c + c];
            *d = (t->func == EDGES_SET1 ? 0 : *d * 3) + s + (uint64_t)(r * t->out.w + c);
        }
    return 0;
}

static void run_on(int rt, int prog, uint32_t iters, outcome *out)
{
    init_matrices(out->m);
    sp_args args;
    memset(&args, 0, sizeof args);
    const int64_t shape[2] = {EDGES_R, EDGES_C};
    for (int b = 0; b < 2; b++) {
        sp_tensor_init(&args.tensors[b], (uint64_t)(uintptr_t)out->m[b], SP_DTYPE_U64, 2, shape);
        args.dirs[b] = SP_INOUT;
    }
    args.tensor_count = 2;
    args.scalars[0] = (uint64_t)prog;
    args.scalars[1] = iters;
    args.scalar_count = 2;
    /* A window holding the whole graph (at most 20 tasks an iteration, 24
     * iterations): no task retires while the orchestration runs (tmr
     * retires only for room), so tmr derives every edge hbg does. */
    sp_call_config cfg = {.task_window = 4096, .trace_level = SP_TRACE_TASKS};
    sp_run_stats st;
    int rc = sp_worker_run(w[rt], 0, &args, &cfg, &st);
    cr_assert_eq(rc, SP_OK, "%s %s: %s: %s", rt_name[rt], prog_name[prog], sp_status_name(rc),
                 sp_worker_last_error(w[rt]));
    out->edges = trace_pairs(sp_worker_last_trace(w[rt]), &out->edge_count);
    cr_assert_eq(out->edge_count, st.edges, "%s: traced edges and the run's count", rt_name[rt]);
    out->tasks = st.tasks;
}

/* Edges whose consumer is one of the last `tasks` tasks. */
static uint64_t edges_into_last(const outcome *o, uint64_t tasks)
{
    uint64_t n = 0;
    for (uint64_t i = 0; i < o->edge_count; i++)
        n += o->edges[i].consumer >= o->tasks - tasks;
    return n;
}

static int count_task(void *ctx, const edges_task *t)
{
    (void)t;
    ++*(uint64_t *)ctx;
    return 0;
}

/* Both runtimes: the reference's bytes, the same edges pair for pair; and
 * returns the edges into the last iteration's tasks. */
static uint64_t same_edges(int prog, uint32_t iters)
{
    static outcome o[2];
    static uint64_t want[2][EDGES_R * EDGES_C];
    init_matrices(want);
    const edges_geom g = edges_geom_of(prog);
    edges_program(prog, iters, &g, reference_task, want);
    for (int rt = 0; rt < 2; rt++) {
        run_on(rt, prog, iters, &o[rt]);
        cr_assert_eq(memcmp(o[rt].m, want, sizeof want), 0,
                     "%s %s, %u iterations: the bytes differ from the sequential reference",
                     rt_name[rt], prog_name[prog], iters);
    }
    cr_assert_eq(o[0].tasks, o[1].tasks);
    cr_assert_eq(o[0].edge_count, o[1].edge_count, "%s, %u iterations: hbg %llu edges, tmr %llu",
                 prog_name[prog], iters, (unsigned long long)o[0].edge_count,
                 (unsigned long long)o[1].edge_count);
    for (uint64_t i = 0; i < o[0].edge_count; i++)
        cr_assert(o[0].edges[i].producer == o[1].edges[i].producer &&
                      o[0].edges[i].consumer == o[1].edges[i].consumer,
                  "%s: edge %llu is %llu -> %llu on hbg, %llu -> %llu on tmr", prog_name[prog],
                  (unsigned long long)i, (unsigned long long)o[0].edges[i].producer,
                  (unsigned long long)o[0].edges[i].consumer,
                  (unsigned long long)o[1].edges[i].producer,
                  (unsigned long long)o[1].edges[i].consumer);
    uint64_t per_iter = 0;
    edges_program(prog, 1, &g, count_task, &per_iter);
    uint64_t last = edges_into_last(&o[0], per_iter);
    cr_log_info("%s, %u iterations: %llu tasks, %llu edges (%.2f per task), %llu into the last "
                "iteration's %llu tasks",
                prog_name[prog], iters, (unsigned long long)o[0].tasks,
                (unsigned long long)o[0].edge_count, (double)o[0].edge_count / (double)o[0].tasks,
                (unsigned long long)last, (unsigned long long)per_iter);
    free(o[0].edges);
    free(o[1].edges);
    return last;
}

static void program_on_both(int prog)
{
    uint64_t few = same_edges(prog, 4), many = same_edges(prog, 24);
    cr_assert_eq(many, few, "%s: %llu edges into the 24th iteration, %llu into the 4th",
                 prog_name[prog], (unsigned long long)many, (unsigned long long)few);
}

Test(edges_both_runtimes, row_stencil)
{
    program_on_both(EDGES_STENCIL_ROWS);
}

Test(edges_both_runtimes, stencil_2d)
{
    program_on_both(EDGES_STENCIL_2D);
}

Test(edges_both_runtimes, wavefront)
{
    program_on_both(EDGES_WAVEFRONT);
}

Test(edges_both_runtimes, cholesky)
{
    program_on_both(EDGES_CHOLESKY);
}
