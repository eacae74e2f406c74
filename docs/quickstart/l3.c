/* quickstart_l3: the quickstart's callable on every chip, then a sum over
 * the chips (docs/USAGE.md section 12). Chip c computes z_c = 2 x_c + y_c
 * into its window of a communication domain, and an allreduce leaves
 * sum_c z_c on every chip. With x_c = c + 1 and y_c = 1 that is P (P + 2)
 * for P chips.
 *
 *   quickstart_l3 CALLABLE.spc [CHIPS] [hbg|tmr]           level 3: CHIPS in this process
 *   mpirun -np R quickstart_l3 CALLABLE.spc [CHIPS] --mpi  level 4: CHIPS per rank
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simpler/l3.h"
#include "simpler/status.h"
#ifdef QUICKSTART_MPI
#include "simpler/mpi.h"
#endif

enum { N = 4096, TILE = 512 };

typedef struct step_state {
    uint32_t chips;
    sp_l3_tensor x[SP_L3_MAX_CHIPS], y[SP_L3_MAX_CHIPS];
    sp_l3_domain *dom;
} step_state;

/* The L3 orchestration: runs on the host, once per sp_l3_run_orch. Each
 * submit starts as soon as what it reads is ready; the allreduce waits
 * for the chip tasks because it reads the window bytes they write. */
static int step(sp_l3_run *r, void *user)
{
    step_state *s = user;
    for (uint32_t c = 0; c < s->chips; c++) {
        sp_l3_tensor z;
        sp_l3_domain_view(s->dom, c, 0, SP_DTYPE_F32, N, &z);
        sp_l3_arg args[3] = {{s->x[c], SP_IN}, {s->y[c], SP_IN}, {z, SP_OUT}};
        uint64_t tile = TILE;
        sp_l3_submit(r, (int)c, 0, args, 3, &tile, 1, NULL);
    }
    sp_l3_allreduce(r, s->dom, 0, N, SP_DTYPE_F32, SP_L3_SUM);
    return sp_l3_run_error(r);
}

static int fail(const char *what, int rc, const char *msg)
{
    /* The L3 layer's messages start with the status name already. */
    if (strncmp(msg, "SP_E", 4) == 0)
        fprintf(stderr, "quickstart_l3: %s: %s\n", what, msg);
    else
        fprintf(stderr, "quickstart_l3: %s: %s: %s\n", what, sp_status_name(rc), msg);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CALLABLE.spc [CHIPS] [hbg|tmr] [--mpi]\n", argv[0]);
        return 2;
    }
    sp_l3_options opt = {.chips = argc > 2 ? (uint32_t)atoi(argv[2]) : 2, .runtime = "hbg"};
    int use_mpi = 0;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--mpi") == 0)
            use_mpi = 1;
        else
            opt.runtime = argv[i];
    }
    char err[512] = "";
#ifdef QUICKSTART_MPI
    sp_mpi *mpi = NULL;
    if (use_mpi) {
        int rc = sp_mpi_open(&argc, &argv, &mpi, err, sizeof err);
        if (rc)
            return fail("sp_mpi_open", rc, err);
        opt.transport = sp_mpi_transport(mpi);
    }
#else
    if (use_mpi)
        return fail("--mpi", SP_ENOTSUP, "built without Open MPI");
#endif
    sp_l3 *l3 = NULL;
    int rc = sp_l3_open(&opt, &l3, err, sizeof err);
    if (rc)
        return fail("sp_l3_open", rc, err);
    if ((rc = sp_l3_register_callable_file(l3, 0, argv[1])))
        return fail("register", rc, sp_l3_last_error(l3));

    /* Tensors on every chip of every rank (each rank makes the same ones;
     * only the rank that holds a chip has its memory and writes it). */
    step_state s = {.chips = sp_l3_chip_count(l3)};
    static float x[N], y[N];
    const int64_t shape[1] = {N};
    for (uint32_t c = 0; c < s.chips; c++) {
        for (int i = 0; i < N; i++)
            x[i] = (float)(c + 1), y[i] = 1.0f;
        if ((rc = sp_l3_tensor_alloc(l3, (int)c, SP_DTYPE_F32, 1, shape, &s.x[c])) ||
            (rc = sp_l3_tensor_alloc(l3, (int)c, SP_DTYPE_F32, 1, shape, &s.y[c])) ||
            (rc = sp_l3_write(l3, &s.x[c], x, sizeof x)) ||
            (rc = sp_l3_write(l3, &s.y[c], y, sizeof y)))
            return fail("tensors", rc, sp_l3_last_error(l3));
    }
    int members[SP_L3_MAX_CHIPS];
    for (uint32_t c = 0; c < s.chips; c++)
        members[c] = (int)c;
    if ((rc = sp_l3_domain_create(l3, members, s.chips, N * sizeof(float), &s.dom)))
        return fail("domain", rc, sp_l3_last_error(l3));

    sp_l3_stats st;
    rc = sp_l3_run_orch(l3, step, &s, &st);
    if (rc)
        return fail("run", rc, sp_l3_last_error(l3));

    /* Every chip of this rank holds the sum. */
    const float want = (float)(s.chips * (s.chips + 2));
    int bad = 0;
    for (uint32_t c = 0; c < s.chips; c++) {
        if (!sp_l3_chip_is_local(l3, (int)c))
            continue;
        sp_l3_tensor z;
        sp_l3_domain_view(s.dom, c, 0, SP_DTYPE_F32, N, &z);
        static float got[N];
        if ((rc = sp_l3_read(l3, &z, got, sizeof got)))
            return fail("read", rc, sp_l3_last_error(l3));
        for (int i = 0; i < N; i++)
            bad += got[i] != want;
    }
    printf("quickstart_l3: rank %d of %d, %u chips, %u chip tasks, sum = %g: %s\n", sp_l3_rank(l3),
           sp_l3_rank_count(l3), s.chips, st.chip_tasks, want, bad ? "FAIL" : "PASS");
    sp_l3_domain_destroy(s.dom);
    sp_l3_close(l3);
#ifdef QUICKSTART_MPI
    sp_mpi_close(mpi);
#endif
    return bad ? 1 : 0;
}
