/* Every example and case run through the eager reference executor (no
 * runtime, no device): the orchestration + kernels must match the
 * independent golden, the task count must match what the example expects,
 * and a one-element corruption of any checked output must fail check() —
 * so a golden that anything would match cannot pass. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "eager_orch.h"
#include "example.h"
#include "simpler/tensor.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Nudge element `i` of host tensor `t` well past any example's tolerance. */
static void corrupt(const sp_tensor *t, int64_t i, char *saved)
{
    char *p = (char *)(uintptr_t)t->addr + i * (int64_t)sp_dtype_size(t->dtype);
    memcpy(saved, p, sp_dtype_size(t->dtype));
    if (t->dtype == SP_DTYPE_F32) {
        float v;
        memcpy(&v, p, sizeof v);
        v += 1.0f + fabsf(v) * 0.01f;
        memcpy(p, &v, sizeof v);
    } else if (t->dtype == SP_DTYPE_I64) {
        int64_t v;
        memcpy(&v, p, sizeof v);
        v += 1;
        memcpy(p, &v, sizeof v);
    } else {
        p[0] ^= 1;
    }
}

static void run_case_with(const ex_example *ex, const ex_case *c, const char *const *overrides)
{
    char err[EX_ERR_LEN] = "";
    ex_instance inst;
    cr_assert_eq(ex_instance_init(&inst, ex, c->name, overrides, err, sizeof err), 0, "%s/%s: %s",
                 ex->name, c->name, err);
    cr_assert_eq(ex->setup(&inst, err, sizeof err), 0, "%s/%s setup: %s", ex->name, c->name, err);

    char manifest[1024];
    snprintf(manifest, sizeof manifest, "%s/%s/manifest.txt", SP_EXAMPLES_DIR, ex->name);
    eager_orch eo;
    eager_orch_init(&eo);
    cr_assert_eq(eager_orch_load_manifest(&eo, manifest), 0, "%s: %s", ex->name, eo.msg);

    double t0 = now_ms();
    int rc = eager_orch_run(&eo, &inst.args);
    double ms = now_ms() - t0;
    cr_assert_eq(rc, 0, "%s/%s eager run: %s", ex->name, c->name, eo.msg);
    if (inst.expect_tasks >= 0)
        cr_expect_eq(eo.tasks, inst.expect_tasks, "%s/%s: %lld tasks, expected %lld", ex->name,
                     c->name, (long long)eo.tasks, (long long)inst.expect_tasks);

    double max_err = -1;
    err[0] = '\0';
    cr_expect_eq(ex->check(&inst, &max_err, err, sizeof err), 0, "%s/%s check: %s", ex->name,
                 c->name, err);
    fprintf(stderr, "eager %s/%s: tasks=%lld (dummies %lld) kernel_calls=%lld max_err=%g %.1f ms\n",
            ex->name, c->name, (long long)eo.tasks, (long long)eo.dummy_tasks,
            (long long)eo.blocks_run, max_err, ms);

    /* Each checked output, corrupted at its middle element, must fail. */
    int checked = 0;
    for (uint32_t a = 0; a < inst.args.tensor_count; a++) {
        if (!inst.golden[a])
            continue;
        checked++;
        const sp_tensor *t = &inst.args.tensors[a];
        int64_t mid = sp_tensor_numel(t) / 2;
        char saved[16];
        corrupt(t, mid, saved);
        cr_expect_eq(ex->check(&inst, &max_err, err, sizeof err), 1,
                     "%s/%s: check passed with %s[%lld] corrupted", ex->name, c->name,
                     inst.arg_names[a], (long long)mid);
        memcpy((char *)(uintptr_t)t->addr + mid * (int64_t)sp_dtype_size(t->dtype), saved,
               sp_dtype_size(t->dtype));
    }
    cr_expect_gt(checked, 0, "%s/%s has no golden output", ex->name, c->name);
    cr_expect_eq(ex->check(&inst, &max_err, err, sizeof err), 0, "%s/%s: restore: %s", ex->name,
                 c->name, err);

    eager_orch_free(&eo);
    ex_instance_free(&inst);
}

static void run_case(const ex_example *ex, const ex_case *c)
{
    run_case_with(ex, c, NULL);
}

static void run_example(const char *name)
{
    const ex_example *ex = ex_find(name);
    cr_assert_not_null(ex, "no example %s in the registry", name);
    cr_assert_gt(ex->case_count, 0);
    for (int i = 0; i < ex->case_count; i++)
        run_case(ex, &ex->cases[i]);
}

Test(examples_eager, vector_example)
{
    run_example("vector_example");
}

Test(examples_eager, matmul_diamond)
{
    run_example("matmul_diamond");
}

Test(examples_eager, bgemm)
{
    run_example("bgemm");
}

Test(examples_eager, paged_attention)
{
    run_example("paged_attention");
    /* The issue names these cases exactly. */
    const ex_example *ex = ex_find("paged_attention");
    const char *names[] = {"small", "varlen", "large"};
    for (int i = 0; i < 3; i++) {
        int found = 0;
        for (int c = 0; c < ex->case_count; c++)
            found |= strcmp(ex->cases[c].name, names[i]) == 0;
        cr_expect(found, "paged_attention has no case %s", names[i]);
    }
}

/* Shapes off the defaults: blocks that do not divide the context, odd head
 * counts, one-token contexts, non-square tile grids, SPMD with a remainder. */
Test(examples_eager, parameter_sweep)
{
    static const struct {
        const char *example;
        const char *ov[6];
    } runs[] = {
        {"paged_attention",
         {"batch=3", "heads=3", "head_dim=5", "block_size=7", "context_lens=1,8,50"}},
        {"paged_attention", {"batch=2", "block_size=1", "context_lens=9", "seed=3", "scale=0.5"}},
        {"bgemm", {"tile=8", "grid_m=3", "grid_n=1", "grid_k=5", "groups=3"}},
        {"vector_example", {"n=1001", "blocks=7"}},
        {"control_rw", {"k=-2", "offset=5", "nrep=0", "n=77"}},
        {"control_rw", {"readback=1", "k=1", "offset=0", "seed=9"}},
        {"dummy_chain", {"stamps=1", "gap=1"}},
        {"decoder", {"layers=1", "batch=1", "context_lens=1", "block_size=1"}},
        {"moe", {"tokens=1", "experts=1", "top_k=1", "hidden=3", "ffn=5"}},
        {"moe", {"tokens=33", "experts=7", "top_k=3", "empty=3", "predicated=0"}},
        {"moe", {"tokens=9", "experts=5", "empty=2", "padded=1"}},
        {"moe", {"tokens=9", "experts=5", "empty=2", "padded=1", "predicated=0"}},
        {"decoder", {"layers=3", "batch=3", "heads=3", "head_dim=5", "context_lens=1,7,11"}},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        const ex_example *ex = ex_find(runs[i].example);
        cr_assert_not_null(ex);
        run_case_with(ex, &ex->cases[0], runs[i].ov);
    }
}

Test(examples_eager, dummy_chain)
{
    run_example("dummy_chain");
}

Test(examples_eager, control_rw)
{
    run_example("control_rw");
}

Test(examples_eager, decoder)
{
    run_example("decoder");
}

/* The same layers submitted one by one (graph=0) compute the same step. */
Test(examples_eager, decoder_without_graph_tasks)
{
    const ex_example *ex = ex_find("decoder");
    cr_assert_not_null(ex);
    const char *ov[] = {"graph=0", NULL};
    run_case_with(ex, &ex->cases[0], ov);
    const char *odd[] = {"graph=0",
                         "layers=3",
                         "batch=3",
                         "heads=3",
                         "head_dim=5",
                         "block_size=3",
                         "context_lens=1,7,11",
                         "ffn=9",
                         NULL};
    run_case_with(ex, &ex->cases[0], odd);
}

Test(examples_eager, moe)
{
    run_example("moe");
    const ex_example *ex = ex_find("moe");
    const char *names[] = {"small", "half_empty", "large"};
    for (int i = 0; i < 3; i++) {
        int found = 0;
        for (int c = 0; c < ex->case_count; c++)
            found |= strcmp(ex->cases[c].name, names[i]) == 0;
        cr_expect(found, "moe has no case %s", names[i]);
    }
}

/* half_empty: the router leaves the last half of the experts without a
 * token, and their five tasks each are retired unrun; with predicated=0
 * they run (on no rows) and the result is the same. */
static int64_t moe_skipped(const char *predicated, int64_t *empty_experts)
{
    const ex_example *ex = ex_find("moe");
    cr_assert_not_null(ex);
    const char *ov[] = {predicated, NULL};
    char err[EX_ERR_LEN] = "";
    ex_instance inst;
    cr_assert_eq(ex_instance_init(&inst, ex, "half_empty", ov, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ex->setup(&inst, err, sizeof err), 0, "%s", err);
    char manifest[1024];
    snprintf(manifest, sizeof manifest, "%s/moe/manifest.txt", SP_EXAMPLES_DIR);
    eager_orch eo;
    eager_orch_init(&eo);
    cr_assert_eq(eager_orch_load_manifest(&eo, manifest), 0, "%s", eo.msg);
    cr_assert_eq(eager_orch_run(&eo, &inst.args), 0, "%s", eo.msg);
    double max_err;
    cr_expect_eq(ex->check(&inst, &max_err, err, sizeof err), 0, "%s: %s", predicated, err);
    const sp_tensor *counts = &inst.args.tensors[ex_arg_index(&inst, "counts")];
    *empty_experts = 0;
    for (int64_t e = 0; e < counts->shape[0]; e++)
        *empty_experts += ((const int32_t *)(uintptr_t)counts->addr)[e] == 0;
    int64_t skipped = eo.skipped_tasks;
    cr_expect_eq(eo.tasks, inst.expect_tasks, "skipped tasks count as tasks");
    eager_orch_free(&eo);
    ex_instance_free(&inst);
    return skipped;
}

Test(examples_eager, moe_half_empty_skips_the_empty_experts)
{
    int64_t empty = 0;
    cr_expect_eq(moe_skipped("predicated=1", &empty), 5 * empty);
    cr_expect_geq(empty, 4, "half_empty has %lld empty experts of 8", (long long)empty);
    cr_expect_eq(moe_skipped("predicated=0", &empty), 0);
}

/* The decoder's out after an eager run with `graph` (the instance kept). */
static void decoder_eager(const char *graph, ex_instance *inst)
{
    const ex_example *ex = ex_find("decoder");
    cr_assert_not_null(ex);
    const char *ov[] = {graph, "layers=3", NULL};
    char err[EX_ERR_LEN] = "";
    cr_assert_eq(ex_instance_init(inst, ex, "small", ov, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ex->setup(inst, err, sizeof err), 0, "%s", err);
    char manifest[1024];
    snprintf(manifest, sizeof manifest, "%s/decoder/manifest.txt", SP_EXAMPLES_DIR);
    eager_orch eo;
    eager_orch_init(&eo);
    cr_assert_eq(eager_orch_load_manifest(&eo, manifest), 0, "%s", eo.msg);
    cr_assert_eq(eager_orch_run(&eo, &inst->args), 0, "%s", eo.msg);
    cr_expect_eq(eo.graph_tasks, strcmp(graph, "graph=1") == 0 ? 3 : 0, "%s: one per layer", graph);
    eager_orch_free(&eo);
}

/* A graph task per layer and the same tasks one by one: bit-identical
 * outputs and caches (the same kernels in the same order). */
Test(examples_eager, decoder_graph_tasks_equal_one_by_one)
{
    ex_instance g, d;
    decoder_eager("graph=1", &g);
    decoder_eager("graph=0", &d);
    for (uint32_t a = 0; a < g.args.tensor_count; a++) {
        if (!g.golden[a])
            continue;
        cr_expect_eq(memcmp((const void *)(uintptr_t)g.args.tensors[a].addr,
                            (const void *)(uintptr_t)d.args.tensors[a].addr,
                            (size_t)g.args.tensors[a].buf_bytes),
                     0, "%s differs", g.arg_names[a]);
    }
    ex_instance_free(&g);
    ex_instance_free(&d);
}

Test(examples_eager, registry_lists_every_example_once)
{
    int n = 0;
    const ex_example *const *all = ex_registry(&n);
    cr_assert_eq(n, 8);
    for (int i = 0; i < n; i++) {
        cr_expect_eq(ex_find(all[i]->name), all[i], "%s", all[i]->name);
        for (int j = 0; j < i; j++)
            cr_expect_neq(strcmp(all[i]->name, all[j]->name), 0);
    }
    cr_expect_null(ex_find("no_such_example"));
}

Test(examples_eager, params_overrides_and_errors)
{
    char err[EX_ERR_LEN];
    ex_instance inst;
    const ex_example *ex = ex_find("paged_attention");
    const char *ov[] = {"seed=7", "context_lens=5,6", NULL};
    cr_assert_eq(ex_instance_init(&inst, ex, "varlen", ov, err, sizeof err), 0, "%s", err);
    int64_t v, list[8];
    int n;
    cr_expect_eq(ex_param_int(&inst, "batch", &v, err, sizeof err), 0);
    cr_expect_eq(v, 4, "the case override applies over the default");
    cr_expect_eq(ex_param_int(&inst, "seed", &v, err, sizeof err), 0);
    cr_expect_eq(v, 7, "--param applies over the case");
    cr_expect_eq(ex_param_int_list(&inst, "context_lens", list, 8, &n, err, sizeof err), 0);
    cr_expect_eq(n, 2);
    cr_expect_eq(list[1], 6);
    /* Two lengths for four sequences: setup refuses with a reason. */
    cr_expect_neq(ex->setup(&inst, err, sizeof err), 0);
    cr_expect(strstr(err, "context_lens") != NULL, "%s", err);
    ex_instance_free(&inst);

    const char *bad[] = {"no_such_key=1", NULL};
    cr_expect_neq(ex_instance_init(&inst, ex, NULL, bad, err, sizeof err), 0);
    cr_expect(strstr(err, "no_such_key") != NULL && strstr(err, "head_dim") != NULL, "%s", err);
    cr_expect_neq(ex_instance_init(&inst, ex, "no_such_case", NULL, err, sizeof err), 0);
    cr_expect(strstr(err, "varlen") != NULL, "%s", err);
    const char *notint[] = {"batch=two", NULL};
    cr_assert_eq(ex_instance_init(&inst, ex, NULL, notint, err, sizeof err), 0);
    cr_expect_neq(ex_param_int(&inst, "batch", &v, err, sizeof err), 0);
    cr_expect(strstr(err, "batch") != NULL, "%s", err);
}

/* The executor itself refuses what a runtime refuses. */
static void nop_kernel(const uint64_t *args, const sp_kernel_ctx *ctx)
{
    (void)args;
    (void)ctx;
}

Test(examples_eager, executor_rejects_bad_tasks)
{
    eager_orch eo;
    eager_orch_init(&eo);
    cr_assert_eq(eager_orch_add_kernel(&eo, 0, SP_CORE_AIV, nop_kernel), 0);
    sp_orch *o = &eo.base;
    sp_task t = sp_task_aiv(0);
    cr_expect_eq(sp_submit(o, &t), 0);
    t = sp_task_aiv(0);
    sp_task_dep(&t, 5);
    cr_expect_eq(sp_submit(o, &t), SP_EDEP);
    eager_orch_free(&eo);

    eager_orch_init(&eo);
    cr_assert_eq(eager_orch_add_kernel(&eo, 0, SP_CORE_AIV, nop_kernel), 0);
    t = sp_task_aic(0); /* an AIV kernel on an AIC lane */
    cr_expect_eq(sp_submit(o, &t), SP_EFUNC_ID);
    cr_expect(strstr(eo.msg, "func_id 0") != NULL, "%s", eo.msg);
    eager_orch_free(&eo);

    eager_orch_init(&eo);
    t = sp_task_aiv(3);
    cr_expect_eq(sp_submit(o, &t), SP_EFUNC_ID);
    eager_orch_free(&eo);
}

/* Predicates as the executor evaluates them: at submit, on the element's
 * current value; a false one retires the task unrun, its outputs as they
 * were; a fresh OUT on a predicated task, a float predicate tensor or an
 * element outside the tensor is refused with SP_EPREDICATE. */
static void set_kernel(const uint64_t *args, const sp_kernel_ctx *ctx)
{
    (void)ctx;
    const sp_tensor *t = (const sp_tensor *)(uintptr_t)args[0];
    *(int32_t *)sp_tensor_data(t) = (int32_t)args[1];
}

Test(examples_eager, executor_predicates)
{
    int32_t flag[2] = {0, 3}, cell = -1;
    float fl = 1.0f;
    const int64_t two[1] = {2}, one[1] = {1};
    sp_tensor ft, ct, flt;
    cr_assert_eq(sp_tensor_init(&ft, (uint64_t)(uintptr_t)flag, SP_DTYPE_I32, 1, two), SP_OK);
    cr_assert_eq(sp_tensor_init(&ct, (uint64_t)(uintptr_t)&cell, SP_DTYPE_I32, 1, one), SP_OK);
    cr_assert_eq(sp_tensor_init(&flt, (uint64_t)(uintptr_t)&fl, SP_DTYPE_F32, 1, one), SP_OK);
    static const struct {
        int index, op;
        int64_t value;
        int runs;
    } cases[] = {
        {0, SP_PRED_NE, 0, 0}, {0, SP_PRED_EQ, 0, 1}, {1, SP_PRED_GT, 2, 1}, {1, SP_PRED_GT, 3, 0},
        {1, SP_PRED_GE, 3, 1}, {1, SP_PRED_LT, 3, 0}, {1, SP_PRED_LE, 3, 1}, {0, SP_PRED_LT, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        eager_orch eo;
        eager_orch_init(&eo);
        cr_assert_eq(eager_orch_add_kernel(&eo, 0, SP_CORE_AIV, set_kernel), 0);
        cell = -1;
        sp_task t = sp_task_aiv(0);
        sp_task_arg(&t, &ct, SP_OUT_EXISTING);
        sp_task_scalar(&t, 7);
        sp_task_predicate(&t, &ft, cases[i].index, (sp_pred_op)cases[i].op, cases[i].value);
        cr_expect_eq(sp_submit(&eo.base, &t), 0, "case %zu: %s", i, eo.msg);
        cr_expect_eq(cell, cases[i].runs ? 7 : -1, "case %zu", i);
        cr_expect_eq(eo.skipped_tasks, cases[i].runs ? 0 : 1, "case %zu", i);
        cr_expect_eq(eo.tasks, 1);
        eager_orch_free(&eo);
    }

    /* A value an earlier task wrote decides: the first sets flag[0] = 5. */
    eager_orch eo;
    eager_orch_init(&eo);
    cr_assert_eq(eager_orch_add_kernel(&eo, 0, SP_CORE_AIV, set_kernel), 0);
    sp_task t = sp_task_aiv(0);
    sp_tensor f0;
    sp_tensor_slice(&ft, 0, 0, 1, &f0);
    sp_task_arg(&t, &f0, SP_OUT_EXISTING);
    sp_task_scalar(&t, 5);
    cr_expect_eq(sp_submit(&eo.base, &t), 0);
    cell = -1;
    t = sp_task_aiv(0);
    sp_task_arg(&t, &ct, SP_INOUT);
    sp_task_scalar(&t, 9);
    sp_task_predicate(&t, &ft, 0, SP_PRED_EQ, 5);
    cr_expect_eq(sp_submit(&eo.base, &t), 1);
    cr_expect_eq(cell, 9);
    eager_orch_free(&eo);

    /* Refusals, each by name. */
    for (int bad = 0; bad < 4; bad++) {
        eager_orch_init(&eo);
        cr_assert_eq(eager_orch_add_kernel(&eo, 0, SP_CORE_AIV, set_kernel), 0);
        sp_tensor fresh = sp_tensor_spec(SP_DTYPE_I32, 1, one);
        t = sp_task_aiv(0);
        sp_task_arg(&t, bad == 0 ? &fresh : &ct, bad == 0 ? SP_OUT : SP_OUT_EXISTING);
        sp_task_scalar(&t, 1);
        sp_task_predicate(&t, bad == 1 ? &flt : &ft, bad == 2 ? 2 : 0, SP_PRED_EQ, 0);
        if (bad == 3)
            t.pred_op = 9;
        cr_expect_eq(sp_submit(&eo.base, &t), SP_EPREDICATE, "refusal %d: %s", bad, eo.msg);
        cr_expect(strstr(eo.msg, "task 0") != NULL, "refusal %d: %s", bad, eo.msg);
        eager_orch_free(&eo);
    }
}

/* A graph task runs its body at once; bad arguments are SP_EGRAPH_TASK. */
static void two_tasks(sp_orch *o, const sp_graph_args *a)
{
    sp_tensor x = a->tensors[0];
    for (int i = 0; i < 2; i++) {
        sp_task t = sp_task_aiv(0);
        sp_task_inout(&t, &x);
        sp_task_graph_scalar(&t, a, 0);
        sp_submit(o, &t);
    }
}

Test(examples_eager, executor_graph_tasks)
{
    int32_t cell = 0;
    const int64_t one[1] = {1};
    sp_tensor ct;
    cr_assert_eq(sp_tensor_init(&ct, (uint64_t)(uintptr_t)&cell, SP_DTYPE_I32, 1, one), SP_OK);
    eager_orch eo;
    eager_orch_init(&eo);
    cr_assert_eq(eager_orch_add_kernel(&eo, 0, SP_CORE_AIV, set_kernel), 0);
    sp_graph_args a;
    sp_graph_args_init(&a);
    sp_graph_arg(&a, &ct);
    sp_graph_scalar(&a, 4);
    cr_expect_eq(sp_submit_graph(&eo.base, two_tasks, &a, 1), 2);
    cr_expect_eq(cell, 4);
    cr_expect_eq(eo.tasks, 2);
    cr_expect_eq(eo.graph_tasks, 1);
    cr_expect_eq(sp_submit_graph(&eo.base, NULL, &a, 1), SP_EGRAPH_TASK);
    eager_orch_free(&eo);

    eager_orch_init(&eo);
    sp_graph_args_init(&a);
    for (int i = 0; i <= SP_MAX_GRAPH_TENSORS; i++)
        sp_graph_arg(&a, &ct);
    cr_expect_eq(sp_submit_graph(&eo.base, two_tasks, &a, 1), SP_EGRAPH_TASK);
    cr_expect(strstr(eo.msg, "33 tensors") != NULL, "%s", eo.msg);
    eager_orch_free(&eo);
}
