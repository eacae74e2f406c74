/* A rank that dies mid-run must not hang the job: rank 1 _exit()s while
 * the others wait on it (a receive and the end-of-run agreement, with
 * deadlines far past the test's time limit). mpirun ends the job when a
 * rank exits without finalizing MPI; tests/l4/expect_job_ends.sh checks
 * that the job ended, with a failure, after the survivors were waiting. */
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "common/wait.h"
#include "l3/l3_transport.h"
#include "simpler/mpi.h"

static void on_done(void *user, int status, int peer)
{
    (void)status;
    (void)peer;
    if (user)
        atomic_store_explicit((_Atomic int *)user, 1, memory_order_release);
}

int main(int argc, char **argv)
{
    sp_mpi *m = NULL;
    char err[256] = "";
    if (sp_mpi_open(&argc, &argv, &m, err, sizeof err)) {
        fprintf(stderr, "sp_mpi_open: %s\n", err);
        return 1;
    }
    const sp_l3_transport *t = sp_mpi_transport(m);
    int rank = sp_mpi_rank(m);
    /* Everyone is up before rank 1 goes. */
    l3x_outcome mine = {.rank = rank, .chip = SP_L3_HOST, .task = -1}, first;
    uint64_t far = sp_now_ns() + 600ull * 1000000000ull;
    if (t->agree(t->ctx, &mine, &first, far) != 0)
        return 1;
    char buf[8] = "go";
    if (rank == 1) {
        /* Dies once rank 0 said it waits (so the check sees it did). */
        _Atomic int got = 0;
        t->irecv(t->ctx, buf, sizeof buf, 0, 1, far, on_done, (void *)&got);
        while (!atomic_load_explicit(&got, memory_order_acquire))
            sp__cpu_relax();
        _exit(3);
    }
    printf("rank %d: waiting for rank 1\n", rank);
    fflush(stdout);
    if (rank == 0)
        t->isend(t->ctx, buf, sizeof buf, 1, 1, far, on_done, NULL);
    t->agree(t->ctx, &mine, &first, far);
    printf("rank %d: the agreement returned (it must not)\n", rank);
    sp_mpi_close(m);
    return 0;
}
