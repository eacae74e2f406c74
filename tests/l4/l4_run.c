/* Level 4 end to end: one L3 orchestration run by every rank of an MPI
 * job over libsimpler_mpi (l4_run [chips per rank], under mpirun -np 2 and
 * -np 4). Chips are sim chips with the L3 tests' callable
 * (tests/kernels/l3_kernels.c, fault_kernels.c's segv as func_id 4).
 *   run 1: chip tasks on every chip, a cross-rank copy, a chip task whose
 *          input is on another rank (a transfer inserted), allreduce (f32
 *          sum, i32 max, f16 sum), allgather and alltoall over a domain of
 *          every chip; every result checked on the rank that holds it;
 *   run 2: a kernel fault on rank 1's first chip: rank 1's run returns
 *          SP_EKERNEL_FAULT, every other rank's SP_ERANK naming rank 1;
 *   run 3: the same data run again succeeds (every chip usable).
 * A plain program; exit status 0 when every check passed on every rank. */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "l3/l3_transport.h"
#include "l3_test_callable.h"
#include "simpler/l3.h"
#include "simpler/mpi.h"
#include "simpler/status.h"
#include "simpler/tensor.h"

#define N 64     /* u64 elements of the chip tensors */
#define E 96     /* elements per member of each collective block */
#define WIN 8192 /* window bytes */
/* Window layout (bytes). */
#define OFF_F32 0                   /* E f32: allreduce sum */
#define OFF_I32 (OFF_F32 + E * 4)   /* E i32: allreduce max */
#define OFF_F16 (OFF_I32 + E * 4)   /* E f16: allreduce sum */
#define OFF_AG_IN (OFF_F16 + E * 2) /* 16 i32 in, n x 16 i32 out */
#define AG 16
#define OFF_AG_OUT (OFF_AG_IN + AG * 4)
#define MAX_MEMBERS 8
#define OFF_A2A_IN (OFF_AG_OUT + MAX_MEMBERS * AG * 4) /* n x 4 i32 in, n x 4 out */
#define A2A 4

static int g_rank;
static int g_fails;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "rank %d: %s:%d: check failed: %s: ", g_rank, __FILE__, __LINE__,      \
                    #cond);                                                                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            g_fails++;                                                                             \
        }                                                                                          \
    } while (0)

static const sp_call_config cfg = {.flags = SP_CALL_NO_CHECK};

typedef struct world {
    sp_l3 *l3;
    int chips, cpr, rank, nranks;
    sp_l3_tensor x[SP_L3_MAX_CHIPS], y[SP_L3_MAX_CHIPS], z[SP_L3_MAX_CHIPS];
    sp_l3_domain *d;
    int fault_chip; /* -1: none */
} world;

static uint16_t f32_to_f16_small(int v)
{
    /* Exact for the small integers used here (|v| < 2048). */
    if (v == 0)
        return 0;
    uint16_t sign = v < 0 ? 0x8000 : 0;
    unsigned a = (unsigned)(v < 0 ? -v : v);
    int e = 31 - __builtin_clz(a);
    unsigned man = (a << (10 - e)) & 0x3ff;
    return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | man);
}

static int f16_small_to_int(uint16_t h)
{
    if ((h & 0x7fff) == 0)
        return 0;
    int e = ((h >> 10) & 0x1f) - 15;
    unsigned man = (h & 0x3ff) | 0x400;
    int v = e >= 10 ? (int)(man << (e - 10)) : (int)(man >> (10 - e));
    return h & 0x8000 ? -v : v;
}

static int32_t val(int member, int i)
{
    return (int32_t)((member * 7 + i * 3) % 23) - 11;
}

static int orch(sp_l3_run *r, void *user)
{
    world *w = user;
    for (int c = 0; c < w->chips; c++) {
        sp_l3_arg a = {.tensor = w->x[c], .dir = SP_OUT};
        uint64_t sc[2] = {K_FILL, 1000u * (uint64_t)c};
        sp_l3_submit(r, c, 0, &a, 1, sc, 2, &cfg);
        sp_l3_arg b = {.tensor = w->z[c], .dir = SP_OUT};
        uint64_t sz[2] = {K_FILL, 7};
        sp_l3_submit(r, c, 0, &b, 1, sz, 2, &cfg);
    }
    for (int c = 0; c < w->chips; c++) {
        int next = (c + w->cpr) % w->chips; /* on the next rank */
        sp_l3_copy(r, &w->y[next], &w->x[c]);
        /* z[next] = z[next] * 2 + x[c]: x[c] crosses ranks by an inserted transfer. */
        sp_l3_arg args[2] = {{.tensor = w->x[c], .dir = SP_IN},
                             {.tensor = w->z[next], .dir = SP_INOUT}};
        uint64_t sc[2] = {K_AXPY, 2};
        sp_l3_submit(r, next, 0, args, 2, sc, 2, &cfg);
    }
    if (w->fault_chip >= 0) {
        uint64_t sc[1] = {K_SEGV};
        sp_l3_arg a = {.tensor = w->x[w->fault_chip], .dir = SP_INOUT};
        sp_l3_submit(r, w->fault_chip, 0, &a, 1, sc, 1, &cfg);
    }
    sp_l3_allreduce(r, w->d, OFF_F32, E, SP_DTYPE_F32, SP_L3_SUM);
    sp_l3_allreduce(r, w->d, OFF_I32, E, SP_DTYPE_I32, SP_L3_MAX);
    sp_l3_allreduce(r, w->d, OFF_F16, E, SP_DTYPE_F16, SP_L3_SUM);
    sp_l3_allgather(r, w->d, OFF_AG_IN, OFF_AG_OUT, AG, SP_DTYPE_I32);
    sp_l3_alltoall(r, w->d, OFF_A2A_IN, OFF_A2A_IN + (uint64_t)w->chips * A2A * 4, A2A,
                   SP_DTYPE_I32);
    return sp_l3_run_error(r);
}

/* Write every local member's window inputs (outside runs). */
static int write_windows(world *w)
{
    int n = w->chips;
    for (int m = 0; m < n; m++) {
        if (!sp_l3_chip_is_local(w->l3, m))
            continue;
        uint8_t win[WIN];
        memset(win, 0, sizeof win);
        for (int i = 0; i < E; i++) {
            float f = (float)val(m, i);
            int32_t v = val(m, i) * 3;
            uint16_t h = f32_to_f16_small(val(m, i));
            memcpy(win + OFF_F32 + 4 * i, &f, 4);
            memcpy(win + OFF_I32 + 4 * i, &v, 4);
            memcpy(win + OFF_F16 + 2 * i, &h, 2);
        }
        for (int i = 0; i < AG; i++) {
            int32_t v = 100 * m + i;
            memcpy(win + OFF_AG_IN + 4 * i, &v, 4);
        }
        for (int j = 0; j < n; j++)
            for (int i = 0; i < A2A; i++) {
                int32_t v = 10000 * m + 100 * j + i; /* block j of member m */
                memcpy(win + OFF_A2A_IN + 4 * (j * A2A + i), &v, 4);
            }
        sp_l3_tensor t;
        int rc = sp_l3_domain_view(w->d, (uint32_t)m, 0, SP_DTYPE_U8, WIN, &t);
        if (rc == 0)
            rc = sp_l3_write(w->l3, &t, win, WIN);
        CHECK(rc == 0, "write window of member %d: %s", m, sp_l3_last_error(w->l3));
        if (rc)
            return rc;
    }
    return 0;
}

static void check_results(world *w, const char *run)
{
    int n = w->chips;
    for (int c = 0; c < n; c++) {
        if (!sp_l3_chip_is_local(w->l3, c))
            continue;
        int prev = (c - w->cpr + n) % n;
        uint64_t x[N], y[N], z[N];
        CHECK(sp_l3_read(w->l3, &w->x[c], x, sizeof x) == 0, "read x");
        CHECK(sp_l3_read(w->l3, &w->y[c], y, sizeof y) == 0, "read y");
        CHECK(sp_l3_read(w->l3, &w->z[c], z, sizeof z) == 0, "read z");
        int bad = -1;
        for (int i = 0; i < N && bad < 0; i++)
            if (x[i] != 1000u * (uint64_t)c + (uint64_t)i ||
                y[i] != 1000u * (uint64_t)prev + (uint64_t)i ||
                z[i] != (7u + (uint64_t)i) * 2 + 1000u * (uint64_t)prev + (uint64_t)i)
                bad = i;
        CHECK(bad < 0, "%s: chip %d element %d: x %llu y %llu z %llu", run, c, bad,
              bad >= 0 ? (unsigned long long)x[bad] : 0, bad >= 0 ? (unsigned long long)y[bad] : 0,
              bad >= 0 ? (unsigned long long)z[bad] : 0);
        uint8_t win[WIN];
        sp_l3_tensor t;
        CHECK(sp_l3_domain_view(w->d, (uint32_t)c, 0, SP_DTYPE_U8, WIN, &t) == 0 &&
                  sp_l3_read(w->l3, &t, win, WIN) == 0,
              "read window %d", c);
        bad = -1;
        for (int i = 0; i < E && bad < 0; i++) {
            int sum = 0, max = -1000000;
            for (int m = 0; m < n; m++) {
                sum += val(m, i);
                max = val(m, i) * 3 > max ? val(m, i) * 3 : max;
            }
            float f;
            int32_t v;
            uint16_t h;
            memcpy(&f, win + OFF_F32 + 4 * i, 4);
            memcpy(&v, win + OFF_I32 + 4 * i, 4);
            memcpy(&h, win + OFF_F16 + 2 * i, 2);
            if (f != (float)sum || v != max || f16_small_to_int(h) != sum)
                bad = i;
        }
        CHECK(bad < 0, "%s: chip %d: allreduce element %d", run, c, bad);
        bad = -1;
        for (int m = 0; m < n && bad < 0; m++)
            for (int i = 0; i < AG; i++) {
                int32_t v;
                memcpy(&v, win + OFF_AG_OUT + 4 * (m * AG + i), 4);
                if (v != 100 * m + i)
                    bad = m;
            }
        CHECK(bad < 0, "%s: chip %d: allgather block of member %d", run, c, bad);
        bad = -1;
        for (int m = 0; m < n && bad < 0; m++)
            for (int i = 0; i < A2A; i++) {
                int32_t v;
                memcpy(&v, win + OFF_A2A_IN + (uint64_t)n * A2A * 4 + 4 * (m * A2A + i), 4);
                if (v != 10000 * m + 100 * c + i)
                    bad = m;
            }
        CHECK(bad < 0, "%s: chip %d: alltoall block from member %d", run, c, bad);
    }
}

static void on_token(void *user, int status, int peer)
{
    (void)peer;
    atomic_store_explicit((_Atomic int *)user, status ? status : 1, memory_order_release);
}

/* Wait for a token operation (a yield loop: nothing else runs meanwhile). */
static int token_wait(_Atomic int *flag)
{
    int v;
    while (!(v = atomic_load_explicit(flag, memory_order_acquire)))
        sched_yield();
    return v == 1 ? 0 : v;
}

/* Pass a token along the ranks so that `step` runs on one rank at a time
 * (registering a callable probes each load in a child process with a time
 * limit; every rank at once on a loaded machine under TSan ran past it). */
static int one_rank_at_a_time(sp_mpi *m, int (*step)(sp_l3 *), sp_l3 *l3)
{
    const sp_l3_transport *t = sp_mpi_transport(m);
    int rank = sp_mpi_rank(m), size = sp_mpi_size(m);
    char token = 't';
    uint64_t far = 0; /* no deadline: mpirun's and ctest's limits bound it */
    if (rank > 0) {
        _Atomic int got = 0;
        if (t->irecv(t->ctx, &token, 1, rank - 1, 900, far, on_token, &got) || token_wait(&got))
            return -1;
    }
    int rc = step(l3);
    if (rank + 1 < size) {
        _Atomic int sent = 0;
        if (t->isend(t->ctx, &token, 1, rank + 1, 900, far, on_token, &sent) || token_wait(&sent))
            return -1;
    }
    return rc;
}

static int register_callable(sp_l3 *l3)
{
    char err[512] = "";
    int rc = l3t_register(l3, err, sizeof err);
    CHECK(rc == 0, "register: %s", err);
    return rc;
}

static int data_run(world *w, const char *name)
{
    if (write_windows(w))
        return -1;
    w->fault_chip = -1;
    sp_l3_stats st;
    int rc = sp_l3_run_orch(w->l3, orch, w, &st);
    CHECK(rc == 0, "%s: sp_l3_run_orch: %s: %s", name, sp_status_name(rc), sp_l3_last_error(w->l3));
    if (rc == 0) {
        check_results(w, name);
        CHECK(st.collectives >= 5, "%s: %u collectives counted", name, st.collectives);
    }
    return rc;
}

int main(int argc, char **argv)
{
    int cpr = argc > 1 ? atoi(argv[1]) : 1;
    sp_mpi *m = NULL;
    char err[1024] = "";
    int rc = sp_mpi_open(&argc, &argv, &m, err, sizeof err);
    if (rc) {
        fprintf(stderr, "sp_mpi_open: %s\n", err);
        return 1;
    }
    world w = {.cpr = cpr, .rank = sp_mpi_rank(m), .nranks = sp_mpi_size(m)};
    g_rank = w.rank;
    sp_l3_options o = {
        .chips = (uint32_t)cpr, .transport = sp_mpi_transport(m), .rank_timeout_ms = 60000};
    o.worker.module_dir = SP_MODULE_DIR;
    rc = sp_l3_open(&o, &w.l3, err, sizeof err);
    CHECK(rc == 0, "sp_l3_open: %s", err);
    if (rc) {
        sp_mpi_close(m);
        return 1;
    }
    w.chips = (int)sp_l3_chip_count(w.l3);
    if (w.chips > MAX_MEMBERS) {
        fprintf(stderr, "rank %d: at most %d chips in all\n", w.rank, MAX_MEMBERS);
        g_fails++;
        goto out;
    }
    CHECK(w.chips == cpr * w.nranks && sp_l3_rank(w.l3) == w.rank &&
              sp_l3_rank_count(w.l3) == w.nranks,
          "%d chips, rank %d of %d", w.chips, sp_l3_rank(w.l3), sp_l3_rank_count(w.l3));
    if (one_rank_at_a_time(m, register_callable, w.l3))
        goto out;
    int chips[SP_L3_MAX_CHIPS];
    for (int c = 0; c < w.chips; c++) {
        int64_t n = N;
        chips[c] = c;
        rc = sp_l3_tensor_alloc(w.l3, c, SP_DTYPE_U64, 1, &n, &w.x[c]);
        if (!rc)
            rc = sp_l3_tensor_alloc(w.l3, c, SP_DTYPE_U64, 1, &n, &w.y[c]);
        if (!rc)
            rc = sp_l3_tensor_alloc(w.l3, c, SP_DTYPE_U64, 1, &n, &w.z[c]);
        CHECK(rc == 0, "alloc on chip %d: %s", c, sp_l3_last_error(w.l3));
        if (rc)
            goto out;
    }
    rc = sp_l3_domain_create(w.l3, chips, (uint32_t)w.chips, WIN, &w.d);
    CHECK(rc == 0, "domain: %s", sp_l3_last_error(w.l3));
    if (rc)
        goto out;

    data_run(&w, "run 1");

    /* Run 2: a kernel fault on rank 1's first chip. */
    write_windows(&w);
    w.fault_chip = cpr;
    sp_l3_stats st;
    rc = sp_l3_run_orch(w.l3, orch, &w, &st);
    const char *msg = sp_l3_last_error(w.l3);
    if (w.rank == 1) {
        CHECK(rc == SP_EKERNEL_FAULT, "run 2 on the faulting rank: %s: %s", sp_status_name(rc),
              msg);
    } else {
        CHECK(rc == SP_ERANK, "run 2 on rank %d: %s: %s", w.rank, sp_status_name(rc), msg);
        CHECK(strstr(msg, "rank 1") != NULL, "run 2's message names rank 1: %s", msg);
        CHECK(st.failed_rank == 1 && st.failed_status == SP_EKERNEL_FAULT,
              "run 2 stats: failed rank %d status %d", st.failed_rank, st.failed_status);
    }
    char want[32];
    snprintf(want, sizeof want, "chip %d", cpr);
    CHECK(strstr(msg, want) != NULL, "run 2's message names chip %d: %s", cpr, msg);

    data_run(&w, "run 3");
    sp_l3_domain_destroy(w.d);
out:
    sp_l3_close(w.l3);
    /* Each rank's exit status is its verdict: mpirun fails the job if any is non-zero. */
    printf("rank %d of %d (%d chips per rank): %s (%d checks failed)\n", w.rank, w.nranks, cpr,
           g_fails ? "FAILED" : "passed", g_fails);
    sp_mpi_close(m);
    return g_fails ? 1 : 0;
}
