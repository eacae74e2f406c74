/* The L3 layer in one process (simpler/l3.h): chip tasks with dependencies
 * across 2 and 4 chips on hbg and tmr, copies chip <-> chip and host <->
 * chip, run tensors, inserted copies (and their refusal with explicit
 * transfers), two independent chip tasks that can only finish if they run
 * at the same time, and every bad input refused by name, each followed by
 * a good run. Kernels: tests/kernels/l3_kernels.c. */
#include <sched.h>

#include "common/wait.h"
#include "l3_test_support.h"

static sp_l3 *l3;

static void teardown(void)
{
    sp_l3_close(l3);
    l3 = NULL;
}

TestSuite(l3_core, .fini = teardown, .timeout = 120);

#define N 64

typedef struct chain {
    int chips;
    sp_l3_tensor x, y[4], h[4], hin, z;
    uint64_t host[4][N], in[N];
} chain;

/* x = 10 + i on chip 0; per chip c >= 1: y_c = copy of x, then y_c =
 * y_c * c + x (x copied in by the runtime), then y_c to host h_c; and on
 * the last chip z = hin (host -> chip) then z = z * 2 + y_last. */
static int chain_orch(sp_l3_run *r, void *user)
{
    chain *c = user;
    l3t_fill(r, 0, &c->x, 10);
    for (int k = 1; k < c->chips; k++) {
        sp_l3_copy(r, &c->y[k], &c->x);
        l3t_axpy(r, k, &c->x, &c->y[k], (uint64_t)k);
        sp_l3_copy(r, &c->h[k], &c->y[k]);
    }
    int last = c->chips - 1;
    sp_l3_copy(r, &c->z, &c->hin);
    l3t_axpy(r, last, &c->y[last], &c->z, 2);
    return sp_l3_run_error(r);
}

static void chain_test(int chips, const char *rt)
{
    l3 = l3t_open((uint32_t)chips, rt, 0, 0);
    cr_assert_eq(sp_l3_chip_count(l3), (uint32_t)chips);
    cr_assert_eq(sp_l3_rank(l3), 0);
    cr_assert_eq(sp_l3_rank_count(l3), 1);
    cr_assert(sp_l3_chip_is_local(l3, chips - 1));
    cr_assert(!sp_l3_chip_is_local(l3, chips));
    cr_assert_not_null(sp_l3_chip_worker(l3, 0));
    cr_assert_null(sp_l3_chip_worker(l3, chips));
    chain *c = calloc(1, sizeof *c);
    c->chips = chips;
    int64_t n = N;
    c->x = l3t_vec(l3, 0, N);
    for (int k = 1; k < chips; k++) {
        c->y[k] = l3t_vec(l3, k, N);
        cr_assert_eq(sp_l3_tensor_host(l3, c->host[k], SP_DTYPE_U64, 1, &n, &c->h[k]), SP_OK);
    }
    for (int i = 0; i < N; i++)
        c->in[i] = 1000u + (uint64_t)i;
    cr_assert_eq(sp_l3_tensor_host(l3, c->in, SP_DTYPE_U64, 1, &n, &c->hin), SP_OK);
    c->z = l3t_vec(l3, chips - 1, N);
    for (int round = 0; round < 3; round++) {
        memset(c->host, 0, sizeof c->host);
        sp_l3_stats st;
        int rc = sp_l3_run_orch(l3, chain_orch, c, &st);
        cr_assert_eq(rc, SP_OK, "round %d: %s", round, sp_l3_last_error(l3));
        cr_assert_eq(st.chip_tasks, (uint32_t)(1 + (chips - 1) + 1));
        /* copies: x -> y, x inserted, y -> h per chip; hin -> z; and y_last
         * is on z's chip (no copy). */
        cr_assert_eq(st.copies, (uint32_t)(3 * (chips - 1) + 1), "copies %u", st.copies);
        cr_assert_eq(st.cancelled, 0);
        cr_assert_eq(st.failed_status, 0);
        for (int k = 1; k < chips; k++) {
            uint64_t y[N];
            cr_assert_eq(sp_l3_read(l3, &c->y[k], y, sizeof y), SP_OK);
            for (int i = 0; i < N; i++) {
                uint64_t want = (10u + (uint64_t)i) * (uint64_t)k + 10u + (uint64_t)i;
                cr_assert_eq(y[i], want, "chip %d y[%d] = %llu, want %llu", k, i,
                             (unsigned long long)y[i], (unsigned long long)want);
                cr_assert_eq(c->host[k][i], want, "host copy of chip %d [%d]", k, i);
            }
        }
        uint64_t z[N];
        cr_assert_eq(sp_l3_read(l3, &c->z, z, sizeof z), SP_OK);
        int last = chips - 1;
        for (int i = 0; i < N; i++) {
            uint64_t yl = (10u + (uint64_t)i) * (uint64_t)last + 10u + (uint64_t)i;
            cr_assert_eq(z[i], c->in[i] * 2 + yl, "z[%d]", i);
        }
    }
    free(c);
}

Test(l3_core, chain_2_hbg)
{
    chain_test(2, "hbg");
}

Test(l3_core, chain_2_tmr)
{
    chain_test(2, "tmr");
}

Test(l3_core, chain_4_hbg)
{
    chain_test(4, "hbg");
}

Test(l3_core, chain_4_tmr)
{
    chain_test(4, "tmr");
}

/* Mixed runtimes: chip 0 hbg, chip 1 tmr. */
Test(l3_core, mixed_runtimes)
{
    char err[1024] = "";
    sp_l3_options o = {.chips = 2, .runtime = "hbg"};
    o.chip_runtime[1] = "tmr";
    o.worker.module_dir = SP_MODULE_DIR;
    cr_assert_eq(sp_l3_open(&o, &l3, err, sizeof err), SP_OK, "%s", err);
    cr_assert_eq(l3t_register(l3, err, sizeof err), SP_OK, "%s", err);
    chain *c = calloc(1, sizeof *c);
    c->chips = 2;
    int64_t n = N;
    c->x = l3t_vec(l3, 0, N);
    c->y[1] = l3t_vec(l3, 1, N);
    cr_assert_eq(sp_l3_tensor_host(l3, c->host[1], SP_DTYPE_U64, 1, &n, &c->h[1]), SP_OK);
    cr_assert_eq(sp_l3_tensor_host(l3, c->in, SP_DTYPE_U64, 1, &n, &c->hin), SP_OK);
    c->z = l3t_vec(l3, 1, N);
    cr_assert_eq(sp_l3_run_orch(l3, chain_orch, c, NULL), SP_OK, "%s", sp_l3_last_error(l3));
    for (int i = 0; i < N; i++)
        cr_assert_eq(c->host[1][i], 2u * (10u + (uint64_t)i));
    free(c);
}

typedef struct rt_ctx {
    sp_l3_tensor out, tmp;
    int made;
} rt_ctx;

/* A run tensor on chip 1 as the intermediate: tmp = 5 + i; out (chip 0,
 * INOUT, copied in and out by the runtime) = out * 3 + tmp. */
static int run_tensor_orch(sp_l3_run *r, void *user)
{
    rt_ctx *c = user;
    int64_t n = N;
    int rc = sp_l3_run_tensor(r, 1, SP_DTYPE_U64, 1, &n, &c->tmp);
    if (rc)
        return rc;
    c->made++;
    l3t_fill(r, 1, &c->tmp, 5);
    l3t_axpy(r, 1, &c->tmp, &c->out, 3);
    return sp_l3_run_error(r);
}

Test(l3_core, run_tensor_and_inserted_inout)
{
    l3 = l3t_open(2, "hbg", 0, 0);
    rt_ctx c = {0};
    c.out = l3t_vec(l3, 0, N);
    uint64_t v[N], want[N];
    for (int i = 0; i < N; i++)
        want[i] = v[i] = 7u * (uint64_t)i;
    cr_assert_eq(sp_l3_write(l3, &c.out, v, sizeof v), SP_OK);
    for (int round = 0; round < 2; round++) {
        sp_l3_stats st;
        cr_assert_eq(sp_l3_run_orch(l3, run_tensor_orch, &c, &st), SP_OK, "%s",
                     sp_l3_last_error(l3));
        cr_assert_eq(st.chip_tasks, 2);
        cr_assert_eq(st.copies, 2, "out copied in and back: %u", st.copies);
        for (int i = 0; i < N; i++)
            want[i] = want[i] * 3 + 5 + (uint64_t)i;
        cr_assert_eq(sp_l3_read(l3, &c.out, v, sizeof v), SP_OK);
        for (int i = 0; i < N; i++)
            cr_assert_eq(v[i], want[i], "round %d out[%d]", round, i);
        /* The run tensor died with its run. */
        cr_assert_eq(sp_l3_read(l3, &c.tmp, v, sizeof v), SP_ESTALE);
    }
}

/* A strided view of a remote buffer, written (OUT): the runtime copies its
 * byte extent in first, so the elements between stay. */
typedef struct strided_ctx {
    sp_l3_tensor buf, every_other;
} strided_ctx;

static int strided_orch(sp_l3_run *r, void *user)
{
    strided_ctx *c = user;
    l3t_fill(r, 1, &c->every_other, 100);
    return sp_l3_run_error(r);
}

Test(l3_core, inserted_strided_out)
{
    l3 = l3t_open(2, "tmr", 0, 0);
    strided_ctx c;
    c.buf = l3t_vec(l3, 0, N);
    uint64_t v[N];
    for (int i = 0; i < N; i++)
        v[i] = 1u + (uint64_t)i;
    cr_assert_eq(sp_l3_write(l3, &c.buf, v, sizeof v), SP_OK);
    c.every_other = c.buf;
    c.every_other.view.shape[0] = N / 2 - 4;
    c.every_other.view.strides[0] = 2;
    c.every_other.view.offset = 5;
    cr_assert_eq(sp_l3_run_orch(l3, strided_orch, &c, NULL), SP_OK, "%s", sp_l3_last_error(l3));
    cr_assert_eq(sp_l3_read(l3, &c.buf, v, sizeof v), SP_OK);
    for (int i = 0; i < N; i++) {
        uint64_t want = 1u + (uint64_t)i;
        if (i >= 5 && (i - 5) % 2 == 0 && (i - 5) / 2 < N / 2 - 4)
            want = 100u + (uint64_t)((i - 5) / 2);
        cr_assert_eq(v[i], want, "buf[%d] = %llu, want %llu", i, (unsigned long long)v[i],
                     (unsigned long long)want);
    }
}

typedef struct place_ctx {
    sp_l3_tensor a, b;
    int64_t rc;
} place_ctx;

static int place_orch(sp_l3_run *r, void *user)
{
    place_ctx *c = user;
    c->rc = l3t_axpy(r, 1, &c->a, &c->b, 1); /* a is on chip 0 */
    return 0;
}

static int explicit_orch(sp_l3_run *r, void *user)
{
    place_ctx *c = user;
    sp_l3_tensor a1;
    int64_t n = N;
    if (sp_l3_run_tensor(r, 1, SP_DTYPE_U64, 1, &n, &a1))
        return sp_l3_run_error(r);
    sp_l3_copy(r, &a1, &c->a);
    c->rc = l3t_axpy(r, 1, &a1, &c->b, 1);
    return sp_l3_run_error(r);
}

Test(l3_core, explicit_transfers_refuse)
{
    l3 = l3t_open(2, "hbg", SP_L3_EXPLICIT_TRANSFERS, 0);
    place_ctx c = {0};
    c.a = l3t_vec(l3, 0, N);
    c.b = l3t_vec(l3, 1, N);
    sp_l3_stats st;
    int rc = sp_l3_run_orch(l3, place_orch, &c, &st);
    cr_assert_eq(c.rc, SP_EL3_PLACEMENT, "submit gave %lld", (long long)c.rc);
    cr_assert_eq(rc, SP_EL3_PLACEMENT, "run gave %d", rc);
    cr_assert(strstr(sp_l3_last_error(l3), "SP_EL3_PLACEMENT"), "%s", sp_l3_last_error(l3));
    cr_assert(strstr(sp_l3_last_error(l3), "chip 0"), "%s", sp_l3_last_error(l3));
    cr_assert_eq(st.chip_tasks, 0);
    /* The same with the copy made explicit runs. */
    uint64_t v[N];
    for (int i = 0; i < N; i++)
        v[i] = (uint64_t)i;
    cr_assert_eq(sp_l3_write(l3, &c.a, v, sizeof v), SP_OK);
    memset(v, 0, sizeof v);
    cr_assert_eq(sp_l3_write(l3, &c.b, v, sizeof v), SP_OK);
    cr_assert_eq(sp_l3_run_orch(l3, explicit_orch, &c, &st), SP_OK, "%s", sp_l3_last_error(l3));
    cr_assert_geq(c.rc, 0);
    cr_assert_eq(st.copies, 1);
    cr_assert_eq(sp_l3_read(l3, &c.b, v, sizeof v), SP_OK);
    for (int i = 0; i < N; i++)
        cr_assert_eq(v[i], (uint64_t)i);
}

/* Two chip tasks on two chips that each wait for the other's mark (through
 * host memory, with a deadline): both see it only if they run at once. */
typedef struct meet_ctx {
    sp_l3_tensor o0, o1;
    _Atomic uint32_t flag;
} meet_ctx;

static int meet_orch(sp_l3_run *r, void *user)
{
    meet_ctx *c = user;
    sp_l3_arg a0 = l3t_arg(&c->o0, SP_OUT), a1 = l3t_arg(&c->o1, SP_OUT);
    uint64_t s0[5] = {K_MEET, (uint64_t)(uintptr_t)&c->flag, 1, 2, 20000};
    uint64_t s1[5] = {K_MEET, (uint64_t)(uintptr_t)&c->flag, 2, 1, 20000};
    sp_l3_submit(r, 0, 0, &a0, 1, s0, 5, &l3t_cfg);
    sp_l3_submit(r, 1, 0, &a1, 1, s1, 5, &l3t_cfg);
    return sp_l3_run_error(r);
}

Test(l3_core, independent_chips_overlap)
{
    l3 = l3t_open(2, "tmr", 0, 0);
    meet_ctx c;
    c.o0 = l3t_vec(l3, 0, 1);
    c.o1 = l3t_vec(l3, 1, 1);
    atomic_store(&c.flag, 0);
    cr_assert_eq(sp_l3_run_orch(l3, meet_orch, &c, NULL), SP_OK, "%s", sp_l3_last_error(l3));
    uint64_t m0 = 0, m1 = 0;
    cr_assert_eq(sp_l3_read(l3, &c.o0, &m0, sizeof m0), SP_OK);
    cr_assert_eq(sp_l3_read(l3, &c.o1, &m1, sizeof m1), SP_OK);
    cr_assert_eq(m0, 1, "chip 0's task did not see chip 1's running");
    cr_assert_eq(m1, 1, "chip 1's task did not see chip 0's running");
}

/* ---- bad input ---------------------------------------------------------------------- */

typedef struct bad_ctx {
    int mode;
    sp_l3_tensor a, b, f32, freed, short_;
    int64_t rc;
} bad_ctx;

enum {
    BAD_CHIP,
    BAD_STALE,
    BAD_DTYPE,
    BAD_SIZE,
    BAD_NULL,
    BAD_NULL_ARGS,
    BAD_DIR,
    BAD_VIEW,
    BAD_N
};

static int bad_orch(sp_l3_run *r, void *user)
{
    bad_ctx *c = user;
    switch (c->mode) {
    case BAD_CHIP:
        c->rc = l3t_fill(r, 7, &c->a, 1);
        break;
    case BAD_STALE:
        c->rc = l3t_axpy(r, 0, &c->freed, &c->a, 1);
        break;
    case BAD_DTYPE:
        c->rc = sp_l3_copy(r, &c->f32, &c->a);
        break;
    case BAD_SIZE:
        c->rc = sp_l3_copy(r, &c->short_, &c->a);
        break;
    case BAD_NULL:
        c->rc = sp_l3_copy(r, NULL, &c->a);
        break;
    case BAD_NULL_ARGS: {
        uint64_t sc[2] = {K_FILL, 0};
        c->rc = sp_l3_submit(r, 0, 0, NULL, 1, sc, 2, &l3t_cfg);
        break;
    }
    case BAD_DIR: {
        sp_l3_arg a = l3t_arg(&c->a, 9);
        uint64_t sc[2] = {K_FILL, 0};
        c->rc = sp_l3_submit(r, 0, 0, &a, 1, sc, 2, &l3t_cfg);
        break;
    }
    case BAD_VIEW: {
        sp_l3_tensor v = c->a;
        v.view.shape[0] = N + 1;
        c->rc = l3t_fill(r, 0, &v, 0);
        break;
    }
    }
    /* A later submit returns the run's error. */
    int64_t again = l3t_fill(r, 1, &c->b, 3);
    if (again != c->rc)
        return SP_EORCH_FATAL;
    return 0;
}

static int good_orch(sp_l3_run *r, void *user)
{
    bad_ctx *c = user;
    l3t_fill(r, 0, &c->a, 40);
    l3t_axpy(r, 1, &c->a, &c->b, 0);
    return sp_l3_run_error(r);
}

Test(l3_core, bad_input_named)
{
    l3 = l3t_open(2, "hbg", 0, 0);
    bad_ctx c;
    memset(&c, 0, sizeof c);
    c.a = l3t_vec(l3, 0, N);
    c.b = l3t_vec(l3, 1, N);
    c.freed = l3t_vec(l3, 1, N);
    cr_assert_eq(sp_l3_tensor_free(l3, &c.freed), SP_OK);
    cr_assert_eq(sp_l3_tensor_free(l3, &c.freed), SP_ESTALE, "double free");
    cr_assert(strstr(sp_l3_last_error(l3), "SP_ESTALE"), "%s", sp_l3_last_error(l3));
    int64_t n = N, half = N / 2;
    cr_assert_eq(sp_l3_tensor_alloc(l3, 0, SP_DTYPE_F32, 1, &n, &c.f32), SP_OK);
    c.short_ = l3t_vec(l3, 1, half);
    static const struct {
        int status;
        const char *words;
    } want[BAD_N] = {
        [BAD_CHIP] = {SP_EINVAL, "chip 7"},
        [BAD_STALE] = {SP_ESTALE, "freed"},
        [BAD_DTYPE] = {SP_EDTYPE, "u64 into f32"},
        [BAD_SIZE] = {SP_ESHAPE, "64 elements into 32"},
        [BAD_NULL] = {SP_EINVAL, "NULL destination"},
        [BAD_NULL_ARGS] = {SP_EINVAL, "NULL args"},
        [BAD_DIR] = {SP_ETASK_ARGS, "direction 9"},
        [BAD_VIEW] = {SP_ESHAPE, "leaves buffer"},
    };
    for (int m = 0; m < BAD_N; m++) {
        c.mode = m;
        sp_l3_stats st;
        int rc = sp_l3_run_orch(l3, bad_orch, &c, &st);
        cr_assert_eq(c.rc, want[m].status, "mode %d: submit gave %lld", m, (long long)c.rc);
        cr_assert_eq(rc, want[m].status, "mode %d: run gave %d (%s)", m, rc, sp_l3_last_error(l3));
        cr_assert(strstr(sp_l3_last_error(l3), want[m].words), "mode %d: '%s' lacks '%s'", m,
                  sp_l3_last_error(l3), want[m].words);
        cr_assert_eq(st.failed_status, want[m].status);
        cr_assert_eq(st.chip_tasks, 0, "mode %d: %u chip tasks ran", m, st.chip_tasks);
        /* And the next run is good. */
        cr_assert_eq(sp_l3_run_orch(l3, good_orch, &c, NULL), SP_OK, "after mode %d: %s", m,
                     sp_l3_last_error(l3));
        uint64_t v[N];
        cr_assert_eq(sp_l3_read(l3, &c.b, v, sizeof v), SP_OK);
        cr_assert_eq(v[3], 43);
    }
    /* Outside runs. */
    uint64_t v[N];
    cr_assert_eq(sp_l3_read(l3, &c.freed, v, sizeof v), SP_ESTALE);
    cr_assert_eq(sp_l3_read(l3, &c.a, v, sizeof v - 8), SP_EINVAL);
    cr_assert_eq(sp_l3_write(l3, &c.a, NULL, sizeof v), SP_EINVAL);
    sp_l3_tensor t;
    cr_assert_eq(sp_l3_tensor_alloc(l3, 2, SP_DTYPE_U64, 1, &n, &t), SP_EINVAL);
    cr_assert(strstr(sp_l3_last_error(l3), "chip 2"), "%s", sp_l3_last_error(l3));
    cr_assert_eq(sp_l3_tensor_alloc(l3, 0, 99, 1, &n, &t), SP_EDTYPE);
    cr_assert_eq(sp_l3_run_orch(l3, NULL, NULL, NULL), SP_EINVAL);
    char err[256];
    sp_l3 *none;
    cr_assert_eq(sp_l3_open(NULL, &none, err, sizeof err), SP_EINVAL);
    sp_l3_options o = {.chips = 0};
    cr_assert_eq(sp_l3_open(&o, &none, err, sizeof err), SP_EINVAL);
    cr_assert(strstr(err, "chips"), "%s", err);
}

/* Streaming: a submitted task runs while the orchestration is still going
 * (here the orchestration waits, with a deadline, for the task's mark and
 * answers it; the task then sees the answer). Its dependent on another
 * chip runs before the orchestration returns too. */
typedef struct stream_ctx {
    sp_l3_tensor o0, copy1;
    _Atomic uint32_t flag;
    int saw_task;
} stream_ctx;

static int stream_orch(sp_l3_run *r, void *user)
{
    stream_ctx *c = user;
    sp_l3_arg a0 = l3t_arg(&c->o0, SP_OUT);
    uint64_t s0[5] = {K_MEET, (uint64_t)(uintptr_t)&c->flag, 1, 2, 20000};
    sp_l3_submit(r, 0, 0, &a0, 1, s0, 5, &l3t_cfg);
    uint64_t deadline = sp_now_ns() + 20000000000ull;
    while (!(atomic_load(&c->flag) & 1) && sp_now_ns() < deadline)
        sched_yield();
    c->saw_task = (atomic_load(&c->flag) & 1) != 0;
    atomic_fetch_or(&c->flag, 2);
    sp_l3_copy(r, &c->copy1, &c->o0);
    return sp_l3_run_error(r);
}

Test(l3_core, tasks_start_while_submitting)
{
    l3 = l3t_open(2, "hbg", 0, 0);
    stream_ctx c;
    c.o0 = l3t_vec(l3, 0, 1);
    c.copy1 = l3t_vec(l3, 1, 1);
    atomic_store(&c.flag, 0);
    c.saw_task = 0;
    cr_assert_eq(sp_l3_run_orch(l3, stream_orch, &c, NULL), SP_OK, "%s", sp_l3_last_error(l3));
    cr_assert(c.saw_task, "the task did not start while the orchestration ran");
    uint64_t m = 0;
    cr_assert_eq(sp_l3_read(l3, &c.copy1, &m, sizeof m), SP_OK);
    cr_assert_eq(m, 1, "the task did not see the orchestration's answer");
}
