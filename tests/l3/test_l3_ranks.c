/* Level-4 routing without MPI: two sp_l3 in this process, each one rank of
 * a fake in-process transport (tests/l3/l3_coll_ref.h, plus an end-of-run
 * agreement here), two chips each, running the same orchestration on two
 * threads. A copy between chips of two ranks is a send on one and a
 * receive on the other; a chip task whose tensor is on another rank's chip
 * gets it the same way; a collective over a domain spanning both ranks
 * runs through the transport; each rank runs only its own chips' tasks. A
 * kernel fault on rank 1 makes rank 0's run fail with SP_ERANK naming rank
 * 1, its chip and task (the communication still happens, nobody hangs),
 * and both ranks run again after; a rank that does not take part makes the
 * other's run end with SP_ERANK_TIMEOUT naming it. */
#include <pthread.h>
#include <sched.h>

#include "l3_coll_ref.h"
#include "l3_test_support.h"

#define N 16
#define RANKS 2
#define CHIPS 2 /* per rank */

typedef struct world {
    fake_world *fw;
    fake_agree_world aw;
    fake_agree_rank rk[RANKS];
    sp_l3 *l3[RANKS];
    int open_rc[RANKS];
    char err[RANKS][1024];
    uint64_t timeout_ms;
} world;

static world W;

static void *open_rank(void *arg)
{
    int r = (int)(intptr_t)arg;
    sp_l3_options o = {.chips = CHIPS,
                       .runtime = r ? "tmr" : "hbg",
                       .first_device = r * CHIPS,
                       .transport = &W.rk[r].f.t,
                       .rank_timeout_ms = W.timeout_ms};
    o.worker.module_dir = SP_MODULE_DIR;
    W.open_rc[r] = sp_l3_open(&o, &W.l3[r], W.err[r], sizeof W.err[r]);
    return NULL;
}

static void on_both(void *(*fn)(void *))
{
    pthread_t t[RANKS];
    for (int r = 0; r < RANKS; r++)
        cr_assert_eq(pthread_create(&t[r], NULL, fn, (void *)(intptr_t)r), 0);
    for (int r = 0; r < RANKS; r++)
        pthread_join(t[r], NULL);
}

static void setup_world(uint64_t timeout_ms)
{
    memset(&W, 0, sizeof W);
    W.timeout_ms = timeout_ms;
    W.fw = fake_world_new(RANKS);
    pthread_mutex_init(&W.aw.lock, NULL);
    pthread_cond_init(&W.aw.cond, NULL);
    for (int r = 0; r < RANKS; r++) {
        fake_rank_init(&W.rk[r].f, W.fw, r);
        W.rk[r].aw = &W.aw;
        W.rk[r].f.t.ctx = &W.rk[r];
        W.rk[r].f.t.agree = fake_agree;
        W.rk[r].f.t.last_error = fake_last_error;
    }
    on_both(open_rank); /* together: opening ends with an agreement */
    /* Registration is local: one rank at a time, so that each load's probe
     * (a child process with a time limit) does not share the CPUs with the
     * other rank's under TSan on a loaded machine. */
    for (int r = 0; r < RANKS; r++) {
        if (!W.open_rc[r])
            W.open_rc[r] = l3t_register(W.l3[r], W.err[r], sizeof W.err[r]);
        cr_assert_eq(W.open_rc[r], SP_OK, "rank %d: %s", r, W.err[r]);
    }
}

static void teardown(void)
{
    for (int r = 0; r < RANKS; r++)
        sp_l3_close(W.l3[r]);
    free(W.fw);
    memset(&W, 0, sizeof W);
}

TestSuite(l3_ranks, .fini = teardown, .timeout = 120);

/* What each rank makes, in the same order: x on chip 0 (rank 0), y on
 * chip 3 (rank 1), z on chip 1 (rank 0), a domain over chips 1 and 2. */
typedef struct prog {
    sp_l3_tensor x, y, z;
    sp_l3_domain *d;
    int kernel; /* chip 3's first task: K_FILL, or K_SEGV for the fault */
    int rc;
    int64_t bad_id;
    sp_l3_stats st;
} prog;

static prog P[RANKS];

static int prog_orch(sp_l3_run *r, void *user)
{
    prog *p = user;
    l3t_fill(r, 0, &p->x, 10); /* x = 10 + i */
    /* y = fill (or the fault) on chip 3, then y = y * 2 + x, x brought
     * from rank 0 by an inserted transfer. */
    sp_l3_arg ya = l3t_arg(&p->y, SP_OUT);
    uint64_t sc[2] = {(uint64_t)p->kernel, 100};
    p->bad_id = sp_l3_submit(r, 3, 0, &ya, 1, sc, 2, &l3t_cfg);
    l3t_axpy(r, 3, &p->x, &p->y, 2);
    /* z (chip 1) = copy of y across ranks, then z = z * 3 + x. */
    sp_l3_copy(r, &p->z, &p->y);
    l3t_axpy(r, 1, &p->x, &p->z, 3);
    /* Each member fills its block of the window (member m: 50 * m + i),
     * then an allgather over both ranks. */
    for (uint32_t m = 0; m < 2; m++) {
        sp_l3_tensor blk;
        if (sp_l3_domain_view(p->d, m, m * N * 8, SP_DTYPE_U64, N, &blk))
            return SP_EINVAL;
        l3t_fill(r, m ? 2 : 1, &blk, 50 * m);
    }
    /* Member i's block at in_off = i * N * 8 would differ per member; the
     * allgather reads member i's [0, N) and writes 2 blocks at 2N. */
    sp_l3_allgather(r, p->d, 0, 2 * N * 8, N, SP_DTYPE_U64);
    return 0;
}

static void *make_rank(void *arg)
{
    int rk = (int)(intptr_t)arg;
    sp_l3 *l3 = W.l3[rk];
    prog *p = &P[rk];
    int64_t n = N;
    int chips[2] = {1, 2};
    p->rc = sp_l3_tensor_alloc(l3, 0, SP_DTYPE_U64, 1, &n, &p->x);
    p->rc |= sp_l3_tensor_alloc(l3, 3, SP_DTYPE_U64, 1, &n, &p->y);
    p->rc |= sp_l3_tensor_alloc(l3, 1, SP_DTYPE_U64, 1, &n, &p->z);
    p->rc |= sp_l3_domain_create(l3, chips, 2, 4 * N * 8, &p->d);
    uint64_t zero[N] = {0};
    p->rc |= sp_l3_write(l3, &p->z, zero, sizeof zero); /* a no-op on rank 1 */
    return NULL;
}

static void *run_rank(void *arg)
{
    int rk = (int)(intptr_t)arg;
    P[rk].rc = sp_l3_run_orch(W.l3[rk], prog_orch, &P[rk], &P[rk].st);
    return NULL;
}

static void check_good_run(int round)
{
    for (int r = 0; r < RANKS; r++)
        cr_assert_eq(P[r].rc, SP_OK, "round %d rank %d: %s", round, r, sp_l3_last_error(W.l3[r]));
    /* Rank 0 ran fill x, z += x, and the fill of member 0: 3 chip tasks. */
    cr_assert_eq(P[0].st.chip_tasks, 3, "rank 0 ran %u chip tasks", P[0].st.chip_tasks);
    cr_assert_eq(P[1].st.chip_tasks, 3, "rank 1 ran %u chip tasks", P[1].st.chip_tasks);
    cr_assert_eq(P[0].st.collectives, 1);
    cr_assert_eq(P[1].st.collectives, 1);
    uint64_t y[N], z[N], win[4 * N];
    cr_assert_eq(sp_l3_read(W.l3[1], &P[1].y, y, sizeof y), SP_OK);
    cr_assert_eq(sp_l3_read(W.l3[0], &P[0].z, z, sizeof z), SP_OK);
    for (int i = 0; i < N; i++) {
        uint64_t x = 10u + (uint64_t)i, yy = (100u + (uint64_t)i) * 2 + x;
        cr_assert_eq(y[i], yy, "y[%d] = %llu", i, (unsigned long long)y[i]);
        cr_assert_eq(z[i], yy * 3 + x, "z[%d] = %llu", i, (unsigned long long)z[i]);
    }
    for (int r = 0; r < RANKS; r++) {
        sp_l3_tensor w;
        cr_assert_eq(sp_l3_domain_view(P[r].d, (uint32_t)r, 0, SP_DTYPE_U64, 4 * N, &w), SP_OK);
        cr_assert_eq(sp_l3_read(W.l3[r], &w, win, sizeof win), SP_OK);
        for (int i = 0; i < N; i++) {
            /* member 0's [0, N) is 0 + i; member 1's is its own [0, N), never written: 0 */
            cr_assert_eq(win[2 * N + i], (uint64_t)i, "rank %d block 0 [%d]", r, i);
        }
    }
}

Test(l3_ranks, routing_across_two_ranks)
{
    setup_world(0);
    on_both(make_rank);
    for (int r = 0; r < RANKS; r++)
        cr_assert_eq(P[r].rc, SP_OK, "rank %d: %s", r, sp_l3_last_error(W.l3[r]));
    cr_assert_eq(sp_l3_chip_count(W.l3[0]), 4);
    cr_assert_eq(sp_l3_rank(W.l3[1]), 1);
    cr_assert_eq(sp_l3_rank_count(W.l3[1]), 2);
    cr_assert(sp_l3_chip_is_local(W.l3[1], 3));
    cr_assert(!sp_l3_chip_is_local(W.l3[1], 1));
    for (int round = 0; round < 2; round++) {
        P[0].kernel = P[1].kernel = K_FILL;
        on_both(run_rank);
        check_good_run(round);
    }
}

Test(l3_ranks, fault_on_one_rank_names_it)
{
    setup_world(0);
    on_both(make_rank);
    P[0].kernel = P[1].kernel = K_SEGV;
    on_both(run_rank);
    cr_assert_eq(P[1].rc, SP_EKERNEL_FAULT, "rank 1: %s", sp_l3_last_error(W.l3[1]));
    cr_assert_eq(P[0].rc, SP_ERANK, "rank 0: %s", sp_l3_last_error(W.l3[0]));
    const char *e = sp_l3_last_error(W.l3[0]);
    char words[64];
    snprintf(words, sizeof words, "rank 1 failed (chip 3, task %lld", (long long)P[0].bad_id);
    cr_assert(strstr(e, words), "'%s' lacks '%s'", e, words);
    cr_assert(strstr(e, "SP_EKERNEL_FAULT"), "%s", e);
    cr_assert_eq(P[0].st.failed_rank, 1);
    cr_assert_eq(P[0].st.failed_chip, 3);
    cr_assert_eq(P[0].st.failed_status, SP_EKERNEL_FAULT);
    cr_assert_eq(P[1].st.failed_chip, 3);
    /* Rank 1 cancels its own dependents (y = y * 2 + x) but still sends y. */
    cr_assert_geq(P[1].st.cancelled, 1);
    /* Both run again. */
    P[0].kernel = P[1].kernel = K_FILL;
    on_both(run_rank);
    check_good_run(0);
}

static void *run_rank0_only(void *arg)
{
    (void)arg;
    P[0].rc = sp_l3_run_orch(W.l3[0], prog_orch, &P[0], &P[0].st);
    return NULL;
}

Test(l3_ranks, absent_rank_times_out)
{
    setup_world(300);
    on_both(make_rank);
    P[0].kernel = K_FILL;
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, run_rank0_only, NULL), 0);
    /* Rank 1 never runs: once rank 0 posted its part, expire what waits on
     * rank 1, as a real transport does at the deadline. */
    uint64_t deadline = sp_now_ns() + 20000000000ull;
    while (atomic_load(&W.fw->posted) < 3 && sp_now_ns() < deadline)
        sched_yield();
    cr_assert_geq(atomic_load(&W.fw->posted), 3, "rank 0 posted %d transfers",
                  atomic_load(&W.fw->posted));
    bool joined = false;
    while (!joined && sp_now_ns() < deadline) {
        fake_expire(W.fw, 1);
        sched_yield();
        joined = pthread_tryjoin_np(t, NULL) == 0;
    }
    cr_assert(joined, "rank 0's run did not end");
    cr_assert_eq(P[0].rc, SP_ERANK_TIMEOUT, "rank 0: %s", sp_l3_last_error(W.l3[0]));
    cr_assert(strstr(sp_l3_last_error(W.l3[0]), "rank 1"), "%s", sp_l3_last_error(W.l3[0]));
    cr_assert_eq(P[0].st.failed_rank, 1);
}
