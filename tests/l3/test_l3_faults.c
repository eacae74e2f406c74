/* Faults in an L3 run: a kernel that crashes (SIGSEGV) or hangs past its
 * timeout on one chip fails the run with the chip run's status after the
 * other chips drain; the message and sp_l3_stats name the chip and the
 * task; the failed task's dependents are cancelled (and counted), the
 * independent work still runs; every chip is usable for the next run. An
 * orchestration's own failure (sp_l3_run_fail, a negative return) is named
 * too. */
#include "l3_test_support.h"

#define N 32

static sp_l3 *l3;

static void teardown(void)
{
    sp_l3_close(l3);
    l3 = NULL;
}

TestSuite(l3_faults, .fini = teardown, .timeout = 120);

typedef struct fault_ctx {
    int kernel; /* K_SEGV or K_HANG */
    sp_l3_tensor a, b, c, h;
    uint64_t host[N];
    int64_t bad_id;
} fault_ctx;

/* Tasks: 0 a = fill (chip 0); 1 b = the faulting kernel (chip 1); 2 the
 * inserted copy of b to chip 0 and 3 a += b there; 4 h = b (a copy); 5 the
 * inserted copy of a to chip 1 and 6 c += a there. 2..6 all depend on the
 * fault (6 through the a that 3 was to write) and are cancelled. */
static int fault_orch(sp_l3_run *r, void *user)
{
    fault_ctx *c = user;
    l3t_fill(r, 0, &c->a, 10);
    sp_l3_arg ba = l3t_arg(&c->b, SP_OUT);
    uint64_t sc[1] = {(uint64_t)c->kernel};
    sp_call_config cfg = l3t_cfg;
    cfg.timeout_us = 100000;
    c->bad_id = sp_l3_submit(r, 1, 0, &ba, 1, sc, 1, &cfg);
    l3t_axpy(r, 0, &c->b, &c->a, 1);
    sp_l3_copy(r, &c->h, &c->b);
    l3t_axpy(r, 1, &c->a, &c->c, 1);
    return 0;
}

typedef struct ok_ctx {
    sp_l3_tensor a, b;
} ok_ctx;

static int ok_orch(sp_l3_run *r, void *user)
{
    ok_ctx *c = user;
    l3t_fill(r, 0, &c->a, 5);
    l3t_fill(r, 1, &c->b, 1);
    l3t_axpy(r, 1, &c->a, &c->b, 2);
    return sp_l3_run_error(r);
}

static void fault_test(const char *rt, int kernel, int want)
{
    l3 = l3t_open(2, rt, 0, 0);
    fault_ctx c = {.kernel = kernel};
    c.a = l3t_vec(l3, 0, N);
    c.b = l3t_vec(l3, 1, N);
    c.c = l3t_vec(l3, 1, N);
    int64_t n = N;
    cr_assert_eq(sp_l3_tensor_host(l3, c.host, SP_DTYPE_U64, 1, &n, &c.h), SP_OK);
    for (int round = 0; round < 2; round++) {
        uint64_t z[N] = {0};
        cr_assert_eq(sp_l3_write(l3, &c.c, z, sizeof z), SP_OK);
        memset(c.host, 0xab, sizeof c.host);
        sp_l3_stats st;
        int rc = sp_l3_run_orch(l3, fault_orch, &c, &st);
        const char *e = sp_l3_last_error(l3);
        cr_assert_eq(rc, want, "round %d: got %s: %s", round, sp_status_name(rc), e);
        cr_assert_eq(st.failed_status, want);
        cr_assert_eq(st.failed_chip, 1);
        cr_assert_eq(st.failed_rank, 0);
        cr_assert_eq(st.failed_task, c.bad_id);
        char words[64];
        snprintf(words, sizeof words, "chip 1 task %lld", (long long)c.bad_id);
        cr_assert(strstr(e, words), "'%s' lacks '%s'", e, words);
        cr_assert(strstr(e, sp_status_name(want)), "%s", e);
        cr_assert_eq(st.cancelled, 5, "cancelled %u", st.cancelled);
        cr_assert_eq(st.chip_tasks, 2, "chip tasks %u", st.chip_tasks);
        uint64_t a[N];
        cr_assert_eq(sp_l3_read(l3, &c.a, a, sizeof a), SP_OK);
        for (int i = 0; i < N; i++)
            cr_assert_eq(a[i], 10u + (uint64_t)i, "a[%d]: the cancelled task ran", i);
        cr_assert_eq(c.host[0], 0xababababababababull, "the cancelled copy ran");
        /* Every chip runs the next run. */
        ok_ctx o = {c.a, c.c};
        cr_assert_eq(sp_l3_run_orch(l3, ok_orch, &o, &st), SP_OK, "after the fault: %s",
                     sp_l3_last_error(l3));
        cr_assert_eq(st.failed_status, 0);
        cr_assert_eq(st.failed_chip, SP_L3_HOST);
        uint64_t b[N];
        cr_assert_eq(sp_l3_read(l3, &c.c, b, sizeof b), SP_OK);
        cr_assert_eq(st.chip_tasks, 3);
        for (int i = 0; i < N; i++)
            cr_assert_eq(b[i], (1u + (uint64_t)i) * 2 + 5 + (uint64_t)i);
    }
}

Test(l3_faults, segv_hbg)
{
    fault_test("hbg", K_SEGV, SP_EKERNEL_FAULT);
}

Test(l3_faults, segv_tmr)
{
    fault_test("tmr", K_SEGV, SP_EKERNEL_FAULT);
}

Test(l3_faults, hang_times_out_tmr)
{
    fault_test("tmr", K_HANG, SP_EKERNEL_TIMEOUT);
}

Test(l3_faults, hang_times_out_hbg)
{
    fault_test("hbg", K_HANG, SP_EKERNEL_TIMEOUT);
}

static int fail_orch(sp_l3_run *r, void *user)
{
    ok_ctx *c = user;
    l3t_fill(r, 0, &c->a, 5);
    sp_l3_run_fail(r, SP_EINVAL, "the weights do not fit");
    /* Later submits return the failure and do nothing. */
    if (l3t_fill(r, 1, &c->b, 1) != SP_EINVAL)
        return SP_ESTATE;
    return sp_l3_run_error(r);
}

static int negative_orch(sp_l3_run *r, void *user)
{
    (void)r, (void)user;
    return SP_EDEVMEM;
}

Test(l3_faults, orchestration_failures)
{
    l3 = l3t_open(2, "hbg", 0, 0);
    ok_ctx c = {l3t_vec(l3, 0, N), l3t_vec(l3, 1, N)};
    sp_l3_stats st;
    int rc = sp_l3_run_orch(l3, fail_orch, &c, &st);
    cr_assert_eq(rc, SP_EINVAL, "%s", sp_l3_last_error(l3));
    cr_assert(strstr(sp_l3_last_error(l3), "the weights do not fit"), "%s", sp_l3_last_error(l3));
    cr_assert_eq(st.failed_chip, SP_L3_HOST);
    cr_assert_eq(st.chip_tasks, 1, "the fill submitted before the failure runs");
    rc = sp_l3_run_orch(l3, negative_orch, &c, &st);
    cr_assert_eq(rc, SP_EDEVMEM);
    cr_assert(strstr(sp_l3_last_error(l3), "orchestration returned SP_EDEVMEM"), "%s",
              sp_l3_last_error(l3));
    cr_assert_eq(sp_l3_run_orch(l3, ok_orch, &c, NULL), SP_OK, "%s", sp_l3_last_error(l3));
}
