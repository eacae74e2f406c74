/* Collectives end to end through sp_l3_run_orch (level 3, one process):
 * every kind x dtype x op over 2 and 4 chips (members in a permuted chip
 * order) against the plain reference of tests/l3/l3_coll_ref.h; the
 * dependencies between chip tasks and collectives (fill -> allreduce ->
 * axpy, and a later write of a range the allreduce reads waits for it);
 * bad collectives refused by name, each followed by a good run. */
#include <time.h>

#include "l3_coll_ref.h"
#include "l3_test_support.h"

static sp_l3 *l3;
static sp_l3_domain *dom;

static void teardown(void)
{
    sp_l3_domain_destroy(dom);
    dom = NULL;
    sp_l3_close(l3);
    l3 = NULL;
}

TestSuite(l3_collectives, .fini = teardown, .timeout = 240);

typedef struct coll_job {
    l3_coll c; /* what to submit (kind, dtype, op, root, offsets, count) */
    int64_t id;
} coll_job;

static int submit_coll(sp_l3_run *r, const l3_coll *c)
{
    switch (c->kind) {
    case L3_COLL_ALLREDUCE:
        return (int)sp_l3_allreduce(r, dom, c->in_off, c->count, c->dtype, (sp_l3_reduce_op)c->op);
    case L3_COLL_ALLGATHER:
        return (int)sp_l3_allgather(r, dom, c->in_off, c->out_off, c->count, c->dtype);
    case L3_COLL_REDUCE_SCATTER:
        return (int)sp_l3_reduce_scatter(r, dom, c->in_off, c->out_off, c->count, c->dtype,
                                         (sp_l3_reduce_op)c->op);
    case L3_COLL_BROADCAST:
        return (int)sp_l3_broadcast(r, dom, c->root, c->in_off, c->count, c->dtype);
    case L3_COLL_ALLTOALL:
        return (int)sp_l3_alltoall(r, dom, c->in_off, c->out_off, c->count, c->dtype);
    }
    return SP_EINVAL;
}

static int coll_orch(sp_l3_run *r, void *user)
{
    coll_job *j = user;
    j->id = submit_coll(r, &j->c);
    return sp_l3_run_error(r);
}

/* The whole window of member m as bytes, for writing and reading it. */
static sp_l3_tensor window_of(uint32_t m, uint64_t wb)
{
    sp_l3_tensor t;
    cr_assert_eq(sp_l3_domain_view(dom, m, 0, SP_DTYPE_U8, (int64_t)wb, &t), SP_OK);
    return t;
}

static void run_one(l3_coll_kind kind, int dtype, int op, uint32_t root, uint64_t count, uint32_t n,
                    uint64_t wb, uint64_t *seed)
{
    coll_job j;
    memset(&j, 0, sizeof j);
    j.c.kind = kind;
    j.c.dtype = dtype;
    j.c.op = op;
    j.c.n = n;
    j.c.root = root;
    j.c.count = count;
    size_t es = sp_dtype_size(dtype);
    uint64_t all = count * es * n;
    j.c.in_off = 8;                       /* aligned for every dtype */
    j.c.out_off = (8 + all + 15) / 8 * 8; /* past the input */
    j.c.window_bytes = wb;
    cr_assert(j.c.out_off + all <= wb);
    uint8_t *before[4], *after[4], *got[4];
    for (uint32_t m = 0; m < n; m++) {
        before[m] = malloc(wb);
        after[m] = malloc(wb);
        got[m] = malloc(wb);
        fill(before[m], wb / es, dtype, seed, 0);
        sp_l3_tensor w = window_of(m, wb);
        cr_assert_eq(sp_l3_write(l3, &w, before[m], wb), SP_OK, "%s", sp_l3_last_error(l3));
    }
    reference(&j.c, before, after);
    sp_l3_stats st;
    int rc = sp_l3_run_orch(l3, coll_orch, &j, &st);
    cr_assert_eq(rc, SP_OK, "kind %d dtype %d op %d n %u count %llu: %s", kind, dtype, op, n,
                 (unsigned long long)count, sp_l3_last_error(l3));
    cr_assert_geq(j.id, 0);
    cr_assert_eq(st.collectives, 1);
    cr_assert_gt(st.bytes_moved, 0);
    for (uint32_t m = 0; m < n; m++) {
        sp_l3_tensor w = window_of(m, wb);
        cr_assert_eq(sp_l3_read(l3, &w, got[m], wb), SP_OK);
    }
    expect_windows(&j.c, got, after, "through sp_l3_run_orch");
    for (uint32_t m = 0; m < n; m++) {
        free(before[m]);
        free(after[m]);
        free(got[m]);
    }
}

static void every_kind(uint32_t n, const int *chips, const char *rt)
{
    const uint64_t wb = 8192;
    l3 = l3t_open(n, rt, 0, 0);
    cr_assert_eq(sp_l3_domain_create(l3, chips, n, wb, &dom), SP_OK, "%s", sp_l3_last_error(l3));
    cr_assert_eq(sp_l3_domain_size(dom), n);
    static const int red_dt[] = {SP_DTYPE_F32, SP_DTYPE_F16, SP_DTYPE_I32};
    static const int mv_dt[] = {SP_DTYPE_F32, SP_DTYPE_F16, SP_DTYPE_U8, SP_DTYPE_F64};
    const uint64_t cnt[] = {1, 5, 33};
    uint64_t seed = 2024;
    for (int k = L3_COLL_ALLREDUCE; k <= L3_COLL_ALLTOALL; k++)
        for (size_t ci = 0; ci < 3; ci++) {
            if (k == L3_COLL_ALLREDUCE || k == L3_COLL_REDUCE_SCATTER) {
                for (size_t d = 0; d < 3; d++)
                    for (int op = SP_L3_SUM; op <= SP_L3_MAX; op++)
                        run_one((l3_coll_kind)k, red_dt[d], op, 0, cnt[ci], n, wb, &seed);
            } else {
                for (size_t d = 0; d < 4; d++)
                    run_one((l3_coll_kind)k, mv_dt[d], 0, (uint32_t)(d + ci) % n, cnt[ci], n, wb,
                            &seed);
            }
        }
}

Test(l3_collectives, every_kind_2_chips)
{
    const int chips[2] = {1, 0};
    every_kind(2, chips, "hbg");
}

Test(l3_collectives, every_kind_4_chips)
{
    const int chips[4] = {2, 0, 3, 1};
    every_kind(4, chips, "tmr");
}

/* ---- dependencies ------------------------------------------------------------------ */

#define DN 48 /* u64 elements per member */

typedef struct dep_job {
    uint32_t n;
    sp_l3_tensor in[4], acc[4];
} dep_job;

/* per member m: in = (m + 1) * 100 + i (chip task), then allreduce over
 * `in` as i32 pairs (the values are small: the low words add, the high
 * words stay 0, so it is the u64 sum), then acc = acc * 1 + in on every
 * member (acc filled first), and last member 1's `in` is filled again
 * (it must wait for the allreduce to have read it). */
static int dep_orch(sp_l3_run *r, void *user)
{
    dep_job *j = user;
    for (uint32_t m = 0; m < j->n; m++) {
        l3t_fill(r, j->in[m].chip, &j->in[m], (m + 1) * 100);
        l3t_fill(r, j->acc[m].chip, &j->acc[m], 7);
    }
    sp_l3_allreduce(r, dom, 0, 2 * DN, SP_DTYPE_I32, SP_L3_SUM);
    for (uint32_t m = 0; m < j->n; m++)
        l3t_axpy(r, j->acc[m].chip, &j->in[m], &j->acc[m], 1);
    l3t_fill(r, j->in[1].chip, &j->in[1], 5000);
    return sp_l3_run_error(r);
}

static void deps(uint32_t n, const char *rt)
{
    l3 = l3t_open(n, rt, 0, 0);
    int chips[4] = {0, 1, 2, 3};
    cr_assert_eq(sp_l3_domain_create(l3, chips, n, 2 * DN * 8, &dom), SP_OK);
    dep_job j = {.n = n};
    for (uint32_t m = 0; m < n; m++) {
        cr_assert_eq(sp_l3_domain_view(dom, m, 0, SP_DTYPE_U64, DN, &j.in[m]), SP_OK);
        cr_assert_eq(sp_l3_domain_view(dom, m, DN * 8, SP_DTYPE_U64, DN, &j.acc[m]), SP_OK);
    }
    for (int round = 0; round < 5; round++) {
        sp_l3_stats st;
        int rc = sp_l3_run_orch(l3, dep_orch, &j, &st);
        cr_assert_eq(rc, SP_OK, "round %d: %s", round, sp_l3_last_error(l3));
        cr_assert_eq(st.collectives, 1);
        cr_assert_eq(st.chip_tasks, 3 * n + 1);
        for (uint32_t m = 0; m < n; m++) {
            uint64_t in[DN], acc[DN];
            cr_assert_eq(sp_l3_read(l3, &j.in[m], in, sizeof in), SP_OK);
            cr_assert_eq(sp_l3_read(l3, &j.acc[m], acc, sizeof acc), SP_OK);
            for (uint64_t i = 0; i < DN; i++) {
                uint64_t sum = 0;
                for (uint32_t p = 0; p < n; p++)
                    sum += (p + 1) * 100 + i;
                uint64_t want_in = m == 1 ? 5000 + i : sum;
                cr_assert_eq(in[i], want_in, "round %d member %u in[%llu] = %llu, want %llu", round,
                             m, (unsigned long long)i, (unsigned long long)in[i],
                             (unsigned long long)want_in);
                cr_assert_eq(acc[i], 7 + i + sum, "round %d member %u acc[%llu]", round, m,
                             (unsigned long long)i);
            }
        }
    }
}

Test(l3_collectives, dependencies_2_chips_hbg)
{
    deps(2, "hbg");
}

Test(l3_collectives, dependencies_4_chips_tmr)
{
    deps(4, "tmr");
}

/* ---- refusals ---------------------------------------------------------------------- */

static void expect_refused(coll_job *j, int want, const char *needle)
{
    sp_l3_stats st;
    int rc = sp_l3_run_orch(l3, coll_orch, j, &st);
    cr_assert_eq(rc, want, "want %d, got %d: %s", want, rc, sp_l3_last_error(l3));
    cr_assert(strstr(sp_l3_last_error(l3), needle), "\"%s\" lacks \"%s\"", sp_l3_last_error(l3),
              needle);
    cr_assert_eq(st.collectives, 0);
    /* a good run after it */
    coll_job ok;
    memset(&ok, 0, sizeof ok);
    ok.c.kind = L3_COLL_ALLREDUCE;
    ok.c.dtype = SP_DTYPE_F32;
    ok.c.op = SP_L3_SUM;
    ok.c.count = 4;
    cr_assert_eq(sp_l3_run_orch(l3, coll_orch, &ok, &st), SP_OK, "%s", sp_l3_last_error(l3));
    cr_assert_eq(st.collectives, 1);
}

Test(l3_collectives, bad_collectives_refused_by_name)
{
    l3 = l3t_open(2, "hbg", 0, 0);
    int chips[2] = {0, 1};
    cr_assert_eq(sp_l3_domain_create(l3, chips, 2, 1024, &dom), SP_OK);
    coll_job j;
    memset(&j, 0, sizeof j);
    j.c = (l3_coll){.kind = L3_COLL_ALLGATHER, .dtype = SP_DTYPE_F32, .in_off = 16, .count = 8};
    expect_refused(&j, SP_EINVAL, "overlap"); /* output [0, 64) holds the input */
    j.c = (l3_coll){.kind = L3_COLL_ALLREDUCE, .dtype = SP_DTYPE_BF16, .op = SP_L3_SUM, .count = 8};
    expect_refused(&j, SP_EDTYPE, "allreduce");
    j.c = (l3_coll){.kind = L3_COLL_ALLREDUCE, .dtype = SP_DTYPE_F32, .op = 9, .count = 8};
    expect_refused(&j, SP_EINVAL, "reduce op");
    j.c = (l3_coll){.kind = L3_COLL_ALLTOALL, .dtype = SP_DTYPE_F32, .out_off = 512, .count = 100};
    expect_refused(&j, SP_EBOUNDS, "alltoall");
    j.c = (l3_coll){.kind = L3_COLL_BROADCAST, .dtype = SP_DTYPE_I32, .root = 2, .count = 8};
    expect_refused(&j, SP_EINVAL, "root 2");
    j.c = (l3_coll){.kind = L3_COLL_REDUCE_SCATTER,
                    .dtype = SP_DTYPE_I32,
                    .op = SP_L3_MAX,
                    .in_off = 1000,
                    .out_off = 0,
                    .count = 8};
    expect_refused(&j, SP_EBOUNDS, "reduce_scatter");
}

/* ---- level 4: two sp_l3 "ranks" in this process over the fake transport ----------
 * Two chips per rank, a domain of four members in a permuted order that
 * interleaves the ranks (chips 3, 0, 2, 1: ranks 1, 0, 1, 0); both ranks
 * run the same orchestration on their own threads; each checks its own
 * members' windows against the reference. */

#define L4_RANKS 2
#define L4_CHIPS 2

typedef struct l4_world {
    fake_world *fw;
    fake_agree_world ag;
    fake_agree_rank rk[L4_RANKS];
    sp_l3 *l3[L4_RANKS];
    sp_l3_domain *d[L4_RANKS];
    int rc[L4_RANKS];
    char err[L4_RANKS][1024];
    coll_job job[L4_RANKS];
    sp_l3_stats st[L4_RANKS];
} l4_world;

static l4_world LW;

static void l4_on_both(void *(*fn)(void *))
{
    pthread_t t[L4_RANKS];
    for (int r = 0; r < L4_RANKS; r++)
        cr_assert_eq(pthread_create(&t[r], NULL, fn, (void *)(intptr_t)r), 0);
    for (int r = 0; r < L4_RANKS; r++)
        pthread_join(t[r], NULL);
}

static const int l4_members[4] = {3, 0, 2, 1};
#define L4_WINDOW 4096

static void *l4_open(void *arg)
{
    int r = (int)(intptr_t)arg;
    sp_l3_options o = {.chips = L4_CHIPS,
                       .runtime = r ? "tmr" : "hbg",
                       .first_device = r * L4_CHIPS,
                       .transport = &LW.rk[r].f.t,
                       .rank_timeout_ms = 20000};
    o.worker.module_dir = SP_MODULE_DIR;
    LW.rc[r] = sp_l3_open(&o, &LW.l3[r], LW.err[r], sizeof LW.err[r]);
    if (!LW.rc[r])
        LW.rc[r] = sp_l3_domain_create(LW.l3[r], l4_members, 4, L4_WINDOW, &LW.d[r]);
    return NULL;
}

static int l4_orch(sp_l3_run *r, void *user)
{
    coll_job *j = user;
    sp_l3 *mine = sp_l3_run_l3(r);
    sp_l3_domain *d = LW.d[mine == LW.l3[0] ? 0 : 1];
    switch (j->c.kind) {
    case L3_COLL_ALLREDUCE:
        j->id =
            sp_l3_allreduce(r, d, j->c.in_off, j->c.count, j->c.dtype, (sp_l3_reduce_op)j->c.op);
        break;
    case L3_COLL_ALLGATHER:
        j->id = sp_l3_allgather(r, d, j->c.in_off, j->c.out_off, j->c.count, j->c.dtype);
        break;
    case L3_COLL_REDUCE_SCATTER:
        j->id = sp_l3_reduce_scatter(r, d, j->c.in_off, j->c.out_off, j->c.count, j->c.dtype,
                                     (sp_l3_reduce_op)j->c.op);
        break;
    case L3_COLL_BROADCAST:
        j->id = sp_l3_broadcast(r, d, j->c.root, j->c.in_off, j->c.count, j->c.dtype);
        break;
    case L3_COLL_ALLTOALL:
        j->id = sp_l3_alltoall(r, d, j->c.in_off, j->c.out_off, j->c.count, j->c.dtype);
        break;
    }
    return sp_l3_run_error(r);
}

static void *l4_run(void *arg)
{
    int r = (int)(intptr_t)arg;
    LW.rc[r] = sp_l3_run_orch(LW.l3[r], l4_orch, &LW.job[r], &LW.st[r]);
    return NULL;
}

static void l4_teardown(void)
{
    for (int r = 0; r < L4_RANKS; r++) {
        sp_l3_domain_destroy(LW.d[r]);
        sp_l3_close(LW.l3[r]);
    }
    free(LW.fw);
    memset(&LW, 0, sizeof LW);
}

TestSuite(l3_collectives_l4, .fini = l4_teardown, .timeout = 240);

static void l4_one(l3_coll_kind kind, int dtype, int op, uint32_t root, uint64_t count,
                   uint64_t *seed)
{
    const uint32_t n = 4;
    l3_coll c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.dtype = dtype;
    c.op = op;
    c.n = n;
    c.root = root;
    c.count = count;
    size_t es = sp_dtype_size(dtype);
    uint64_t all = count * es * n;
    c.in_off = 8;
    c.out_off = (8 + all + 15) / 8 * 8;
    c.window_bytes = L4_WINDOW;
    cr_assert(c.out_off + all <= L4_WINDOW);
    uint8_t *before[4], *after[4], *got[4];
    for (uint32_t m = 0; m < n; m++) {
        before[m] = malloc(L4_WINDOW);
        after[m] = malloc(L4_WINDOW);
        got[m] = malloc(L4_WINDOW);
        fill(before[m], L4_WINDOW / es, dtype, seed, 0);
        memcpy(got[m], before[m], L4_WINDOW);
        /* every rank writes every window: a no-op where it is not the owner */
        for (int r = 0; r < L4_RANKS; r++) {
            sp_l3_tensor w;
            cr_assert_eq(sp_l3_domain_view(LW.d[r], m, 0, SP_DTYPE_U8, L4_WINDOW, &w), SP_OK);
            cr_assert_eq(sp_l3_write(LW.l3[r], &w, before[m], L4_WINDOW), SP_OK);
        }
    }
    reference(&c, before, after);
    int posted = atomic_load(&LW.fw->posted);
    for (int r = 0; r < L4_RANKS; r++) {
        memset(&LW.job[r], 0, sizeof LW.job[r]);
        LW.job[r].c = c;
    }
    l4_on_both(l4_run);
    for (int r = 0; r < L4_RANKS; r++) {
        cr_assert_eq(LW.rc[r], SP_OK, "kind %d dtype %d op %d count %llu rank %d: %s", kind, dtype,
                     op, (unsigned long long)count, r, sp_l3_last_error(LW.l3[r]));
        cr_assert_eq(LW.st[r].collectives, 1);
    }
    /* blocks crossed ranks through the transport (the allreduce goes
     * through its iallreduce instead) */
    if (kind != L3_COLL_ALLREDUCE)
        cr_assert_gt(atomic_load(&LW.fw->posted), posted, "kind %d sent nothing", kind);
    /* each member's window from the rank that holds it */
    for (uint32_t m = 0; m < n; m++) {
        int owner = l4_members[m] / L4_CHIPS;
        sp_l3_tensor w;
        cr_assert_eq(sp_l3_domain_view(LW.d[owner], m, 0, SP_DTYPE_U8, L4_WINDOW, &w), SP_OK);
        cr_assert_eq(sp_l3_read(LW.l3[owner], &w, got[m], L4_WINDOW), SP_OK);
    }
    expect_windows(&c, got, after, "level 4 through sp_l3_run_orch");
    for (uint32_t m = 0; m < n; m++) {
        free(before[m]);
        free(after[m]);
        free(got[m]);
    }
}

static void l4_setup(void)
{
    memset(&LW, 0, sizeof LW);
    LW.fw = fake_world_new(L4_RANKS);
    pthread_mutex_init(&LW.ag.lock, NULL);
    pthread_cond_init(&LW.ag.cond, NULL);
    for (int r = 0; r < L4_RANKS; r++) {
        fake_rank_init(&LW.rk[r].f, LW.fw, r);
        LW.rk[r].aw = &LW.ag;
        LW.rk[r].f.t.ctx = &LW.rk[r];
        LW.rk[r].f.t.agree = fake_agree;
        LW.rk[r].f.t.last_error = fake_last_error;
    }
    l4_on_both(l4_open);
    for (int r = 0; r < L4_RANKS; r++)
        cr_assert_eq(LW.rc[r], SP_OK, "rank %d: %s", r, LW.err[r]);
    /* one rank after the other: registration is local, and each load is
     * probed in a child process first (slow under the sanitizers) */
    for (int r = 0; r < L4_RANKS; r++)
        cr_assert_eq(l3t_register(LW.l3[r], LW.err[r], sizeof LW.err[r]), SP_OK, "rank %d: %s", r,
                     LW.err[r]);
}

Test(l3_collectives_l4, every_kind_over_two_ranks)
{
    l4_setup();
    static const int red_dt[] = {SP_DTYPE_F32, SP_DTYPE_F16, SP_DTYPE_I32};
    static const int mv_dt[] = {SP_DTYPE_F32, SP_DTYPE_F16, SP_DTYPE_U8, SP_DTYPE_F64};
    const uint64_t cnt[] = {1, 7, 40};
    uint64_t seed = 4040;
    for (int k = L3_COLL_ALLREDUCE; k <= L3_COLL_ALLTOALL; k++)
        for (size_t ci = 0; ci < 3; ci++) {
            if (k == L3_COLL_ALLREDUCE || k == L3_COLL_REDUCE_SCATTER) {
                for (size_t d = 0; d < 3; d++)
                    for (int op = SP_L3_SUM; op <= SP_L3_MAX; op++)
                        l4_one((l3_coll_kind)k, red_dt[d], op, 0, cnt[ci], &seed);
            } else {
                for (size_t d = 0; d < 4; d++)
                    l4_one((l3_coll_kind)k, mv_dt[d], 0, (uint32_t)(d + ci) % 4, cnt[ci], &seed);
            }
        }
}

/* Two independent allreduces A and B over one domain spanning both ranks,
 * whose inputs are ready in opposite orders on the two ranks: on rank 0
 * A's producer is slow (a kernel that waits 300 ms) and B's fast, on rank
 * 1 the other way round. A transport's allreduces of one group must be
 * posted in the same order on every rank (MPI's rule for collectives on a
 * communicator), so the layer has to start them in submission order, not
 * in the order they become ready; the fake transport fails an allreduce
 * whose members disagree on its count (A has 2 elements, B 1). Should
 * scheduling ever make the fast side as slow, the orders agree and the
 * test passes without proving anything; it never fails spuriously. */
typedef struct order_prog {
    sp_l3_domain *d;
    sp_l3_tensor x[2];     /* on the other chip of each member's rank (chips 1 and 3) */
    _Atomic uint32_t flag; /* the slow kernels wait for a bit nobody sets */
} order_prog;

static order_prog OP[L4_RANKS];

/* The slow producer runs on the member's own chip; the fast one fills x on
 * the rank's other chip and copies it in, so its completion does not wait
 * behind the slow kernel on one chip's driver. */
static int order_orch(sp_l3_run *r, void *user)
{
    order_prog *p = user;
    for (uint32_t m = 0; m < 2; m++) {
        for (int which = 0; which < 2; which++) {
            sp_l3_tensor t;
            if (sp_l3_domain_view(p->d, m, which ? 64 : 0, SP_DTYPE_U64, 1, &t))
                return SP_EINVAL;
            int slow = which == 0 ? m == 0 : m == 1;
            if (slow) {
                sp_l3_arg out = l3t_arg(&t, SP_OUT);
                uint64_t meet[5] = {K_MEET, (uint64_t)(uintptr_t)&p->flag, 1, 2, 300};
                sp_l3_submit(r, t.chip, 0, &out, 1, meet, 5, &l3t_cfg);
            } else {
                l3t_fill(r, p->x[m].chip, &p->x[m], which ? 5 : 7);
                sp_l3_copy(r, &t, &p->x[m]);
            }
        }
    }
    sp_l3_allreduce(r, p->d, 0, 2, SP_DTYPE_I32, SP_L3_SUM);  /* A */
    sp_l3_allreduce(r, p->d, 64, 1, SP_DTYPE_I32, SP_L3_SUM); /* B */
    return sp_l3_run_error(r);
}

static void *order_run(void *arg)
{
    int r = (int)(intptr_t)arg;
    LW.rc[r] = sp_l3_run_orch(LW.l3[r], order_orch, &OP[r], &LW.st[r]);
    return NULL;
}

Test(l3_collectives_l4, allreduces_start_in_submission_order_on_every_rank)
{
    l4_setup();
    const int chips[2] = {0, 2}; /* member 0 on rank 0, member 1 on rank 1 */
    for (int r = 0; r < L4_RANKS; r++) {
        memset(&OP[r], 0, sizeof OP[r]);
        cr_assert_eq(sp_l3_domain_create(LW.l3[r], chips, 2, 128, &OP[r].d), SP_OK, "%s",
                     sp_l3_last_error(LW.l3[r]));
        OP[r].x[0] = l3t_vec(LW.l3[r], 1, 1);
        OP[r].x[1] = l3t_vec(LW.l3[r], 3, 1);
    }
    l4_on_both(order_run);
    for (int r = 0; r < L4_RANKS; r++) {
        cr_assert_eq(LW.rc[r], SP_OK, "rank %d: %s", r, sp_l3_last_error(LW.l3[r]));
        cr_assert_eq(LW.st[r].collectives, 2);
        /* A: 0 (the slow kernel did not meet) + 7; B: 5 + 0, as u64 */
        uint64_t v[2];
        sp_l3_tensor a, b;
        cr_assert_eq(sp_l3_domain_view(OP[r].d, (uint32_t)r, 0, SP_DTYPE_U64, 1, &a), SP_OK);
        cr_assert_eq(sp_l3_domain_view(OP[r].d, (uint32_t)r, 64, SP_DTYPE_U64, 1, &b), SP_OK);
        cr_assert_eq(sp_l3_read(LW.l3[r], &a, &v[0], 8), SP_OK);
        cr_assert_eq(sp_l3_read(LW.l3[r], &b, &v[1], 8), SP_OK);
        cr_assert_eq(v[0], 7, "rank %d: A = %llu", r, (unsigned long long)v[0]);
        cr_assert_eq(v[1], 5, "rank %d: B = %llu", r, (unsigned long long)v[1]);
    }
    for (int r = 0; r < L4_RANKS; r++)
        sp_l3_domain_destroy(OP[r].d);
}
