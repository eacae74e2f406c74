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

Test(examples_eager, registry_lists_every_example_once)
{
    int n = 0;
    const ex_example *const *all = ex_registry(&n);
    cr_assert_eq(n, 6);
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
